// The next fire instants shown for a schedule (the dashboard's "next runs"): the fire times the
// scheduler's passes (due.ts) will use, jitter included, in the order they fire.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dueTicks, planFrom } from './due.js';
import { jitteredFireAt } from './jitter.js';
import { nextTick, type PlanInput } from './plan.js';
import { upcomingFires, type UpcomingPlan } from './upcoming.js';

const T0 = new Date('2026-03-01T12:00:00.000Z');
const iso = (d: Date[]) => d.map((x) => x.toISOString());

type Planned = UpcomingPlan & { nextRunAt: Date | null };

function planned(s: PlanInput & { id: number; jitterSeconds: number }, now: Date): Planned {
  return { ...s, ...planFrom(s, now) };
}

/** Brute force: the fire times of the first `ticks` ticks after nextTickAt, unhandled and after `now`, sorted. */
function bruteForce(s: UpcomingPlan, now: Date, count: number, ticks = 2000): number[] {
  const fires: number[] = [];
  const floor = Math.max(now.getTime(), s.handledThrough?.getTime() ?? -Infinity);
  for (let t = s.nextTickAt, i = 0; t !== null && i < ticks; t = nextTick(s, s.planAnchor, t), i++) {
    const fire = jitteredFireAt(s.id, t, s.jitterSeconds).getTime();
    if (fire > floor) fires.push(fire);
  }
  return fires.sort((a, b) => a - b).slice(0, count);
}

describe('upcomingFires', () => {
  it('an Interval schedule without jitter fires at anchor + k·interval', () => {
    const s = planned({ kind: 'Interval', intervalSeconds: 60, timeZone: 'UTC', id: 1, jitterSeconds: 0 }, T0);
    expect(iso(upcomingFires(s, T0, 5))).toEqual([1, 2, 3, 4, 5].map((k) => new Date(T0.getTime() + k * 60_000).toISOString()));
  });

  it('a Cron schedule fires in its zone (09:00 Berlin is 08:00 UTC in winter)', () => {
    const s = planned({ kind: 'Cron', cronExpression: '0 9 * * *', timeZone: 'Europe/Berlin', id: 2, jitterSeconds: 0 }, T0);
    expect(iso(upcomingFires(s, T0, 3))).toEqual(['2026-03-02T08:00:00.000Z', '2026-03-03T08:00:00.000Z', '2026-03-04T08:00:00.000Z']);
  });

  it('the first instant is the stored nextRunAt of a fresh plan, jitter included', () => {
    for (const id of [1, 7, 42, 1000]) {
      const s = planned({ kind: 'Interval', intervalSeconds: 30, timeZone: 'UTC', id, jitterSeconds: 600 }, T0);
      expect(upcomingFires(s, T0, 5)[0]?.toISOString()).toBe(s.nextRunAt?.toISOString());
    }
  });

  it('with jitter larger than the period, the instants are the earliest fire times in fire order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 10, max: 120 }), fc.integer({ min: 0, max: 900 }), (id, every, jitter) => {
        const s = planned({ kind: 'Interval', intervalSeconds: every, timeZone: 'UTC', id, jitterSeconds: jitter }, T0);
        const got = upcomingFires(s, T0, 5).map((d) => d.getTime());
        expect(got).toEqual(bruteForce(s, T0, 5));
        expect([...got].sort((a, b) => a - b)).toEqual(got);
      }),
      { numRuns: 200 },
    );
  });

  it('leaves out the ticks a pass already handled, as the next pass would', () => {
    const s0 = planned({ kind: 'Interval', intervalSeconds: 10, timeZone: 'UTC', id: 9, jitterSeconds: 120 }, T0);
    const at = new Date(T0.getTime() + 95_000);
    const due = dueTicks({ ...s0, catchupPolicy: 'None', catchupMax: 1 }, at, 60);
    expect(due).not.toBeNull();
    const after: Planned = { ...s0, ...due! };
    const fires = upcomingFires(after, at, 5);
    expect(fires.map((d) => d.getTime())).toEqual(bruteForce(after, at, 5));
    expect(fires[0]?.toISOString()).toBe(after.nextRunAt?.toISOString());
    // Nothing the pass handled (fire time at or before handledThrough) is listed again.
    for (const f of fires) expect(f.getTime()).toBeGreaterThan(after.handledThrough!.getTime());
  });

  it('lists only instants after now when the plan was left behind (scheduler down a year)', () => {
    // A year of 10 s ticks is far more than any walk covers: the gap is skipped, not walked.
    const s = planned({ kind: 'Interval', intervalSeconds: 10, timeZone: 'UTC', id: 3, jitterSeconds: 0 }, T0);
    const now = new Date(T0.getTime() + 365 * 86_400_000 + 500);
    expect(iso(upcomingFires(s, now, 5))).toEqual([1, 2, 3, 4, 5].map((k) => new Date(now.getTime() - 500 + k * 10_000).toISOString()));
  });

  it('a Once schedule has one instant, then none', () => {
    const runAt = new Date(T0.getTime() + 3_600_000);
    const s = planned({ kind: 'Once', runAt, timeZone: 'UTC', id: 4, jitterSeconds: 0 }, T0);
    expect(iso(upcomingFires(s, T0, 5))).toEqual([runAt.toISOString()]);
    expect(upcomingFires(s, new Date(runAt.getTime() + 1), 5)).toEqual([]);
    expect(upcomingFires({ ...s, nextTickAt: null }, T0, 5)).toEqual([]);
  });
});
