// Which ticks a scheduler pass handles (addendum §14.3, §14.4, §14.6), above all with jitter larger
// than the period, where a later tick can fire before an earlier one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dueTicks, planFrom, type PlanState, type StoredPlan } from './due.js';
import { jitteredFireAt } from './jitter.js';
import { nextTick, type PlanInput } from './plan.js';

const GRACE_SECONDS = 60;

type Schedule = PlanInput & {
  id: number;
  jitterSeconds: number;
  catchupPolicy: string;
  catchupMax: number;
};

const stored = (s: Schedule, state: PlanState): StoredPlan => ({ ...s, ...state });

/** Every tick after `start` whose fire time is not after `until`, as the plan defines them. */
function ticksFiringBy(s: Schedule, start: Date, until: number): number[] {
  const ticks: number[] = [];
  for (
    let t = nextTick(s, start, start);
    t !== null && t.getTime() <= until;
    t = nextTick(s, start, t)
  ) {
    if (jitteredFireAt(s.id, t, s.jitterSeconds).getTime() <= until) ticks.push(t.getTime());
  }
  return ticks;
}

interface Handled {
  tick: number;
  at: number;
  trigger: 'Scheduled' | 'Catchup';
}

/**
 * A scheduler that is always awake: its timer wakes it at nextRunAt, and the pass begins up to
 * `latencyMs` later (a wake on the safety poll changes nothing when the plan did not change).
 * Returns every tick handled, in the order handled.
 */
function runScheduler(
  s: Schedule,
  start: Date,
  end: number,
  latencyMs: (i: number) => number,
): { handled: Handled[]; passes: number } {
  let state = planFrom(s, start);
  const handled: Handled[] = [];
  let now = start.getTime();
  let passes = 0;
  while (state.nextRunAt !== null && passes < 100_000) {
    now = Math.max(now, state.nextRunAt.getTime()) + latencyMs(passes);
    if (now > end) break;
    passes += 1;
    const due = dueTicks(stored(s, state), new Date(now), GRACE_SECONDS);
    if (due === null) break;
    for (const t of due.catchup) handled.push({ tick: t.getTime(), at: now, trigger: 'Catchup' });
    for (const t of due.scheduled)
      handled.push({ tick: t.getTime(), at: now, trigger: 'Scheduled' });
    const { planAnchor, nextTickAt, nextRunAt, handledThrough } = due;
    state = { planAnchor, nextTickAt, nextRunAt, handledThrough };
  }
  return { handled, passes };
}

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'];
const CRONS = [
  '* * * * *',
  '*/2 * * * *',
  '*/5 * * * *',
  '7,8,9 * * * *',
  '0 * * * *',
  '30 1,2,3 * * *',
  '*/15 0-3 * * *',
];

const scheduleArb: fc.Arbitrary<Schedule> = fc
  .record({
    id: fc.integer({ min: 1, max: 2 ** 31 }),
    kind: fc.constantFrom('Interval' as const, 'Cron' as const),
    intervalSeconds: fc.integer({ min: 10, max: 900 }),
    cronExpression: fc.constantFrom(...CRONS),
    timeZone: fc.constantFrom(...ZONES),
    jitterRatio: fc.double({ min: 0, max: 6, noNaN: true }),
    catchupPolicy: fc.constantFrom('None', 'One', 'All'),
  })
  .map(({ kind, intervalSeconds, cronExpression, jitterRatio, ...rest }) => {
    const period = kind === 'Interval' ? intervalSeconds : 60;
    return {
      ...rest,
      kind,
      intervalSeconds: kind === 'Interval' ? intervalSeconds : null,
      cronExpression: kind === 'Cron' ? cronExpression : null,
      runAt: null,
      jitterSeconds: Math.min(3600, Math.floor(period * jitterRatio)),
      catchupMax: 10,
    };
  });

describe('dueTicks with the scheduler always awake', () => {
  it('never drops a tick and fires none more than a second late, whatever the period, jitter and zone', () => {
    fc.assert(
      fc.property(
        scheduleArb,
        // Around DST changes of the zones above, and ordinary days.
        fc.constantFrom(
          '2030-03-10T05:00:00Z',
          '2030-03-31T00:00:00Z',
          '2030-10-06T14:00:00Z',
          '2030-10-27T00:00:00Z',
          '2030-11-03T04:30:00Z',
          '2031-01-15T12:00:00Z',
        ),
        fc.array(fc.integer({ min: 0, max: 900 }), { minLength: 1, maxLength: 20 }),
        (s, startIso, latencies) => {
          const start = new Date(startIso);
          const end = start.getTime() + 3 * 3600_000;
          const { handled } = runScheduler(s, start, end, (i) => latencies[i % latencies.length]!);
          const expected = ticksFiringBy(s, start, end - 1000);
          const byTick = new Map<number, Handled[]>();
          for (const h of handled) byTick.set(h.tick, [...(byTick.get(h.tick) ?? []), h]);
          for (const tick of expected)
            expect(byTick.get(tick), new Date(tick).toISOString()).toHaveLength(1);
          for (const [tick, [h]] of byTick) {
            const fire = jitteredFireAt(s.id, new Date(tick), s.jitterSeconds).getTime();
            expect(h!.trigger).toBe('Scheduled');
            expect(h!.at).toBeGreaterThanOrEqual(fire);
            expect(h!.at - fire).toBeLessThanOrEqual(1000);
          }
          expect(handled.length).toBe(byTick.size);
        },
      ),
      { numRuns: 80 },
    );
  }, 120_000);

  it('fires every tick of Interval 60 s with jitter 300 s at its own instant (the simulation that dropped 79 of 336)', () => {
    const s: Schedule = {
      id: 4711,
      kind: 'Interval',
      intervalSeconds: 60,
      timeZone: 'UTC',
      runAt: null,
      cronExpression: null,
      jitterSeconds: 300,
      catchupPolicy: 'None',
      catchupMax: 10,
    };
    const start = new Date('2030-06-01T00:00:00Z');
    const end = start.getTime() + 336 * 60_000;
    const { handled } = runScheduler(s, start, end, () => 5);
    const expected = ticksFiringBy(s, start, end - 1000);
    expect(expected.length).toBeGreaterThan(330);
    expect(handled.map((h) => h.tick).sort((a, b) => a - b)).toEqual(expected);
    for (const h of handled)
      expect(h.at - jitteredFireAt(s.id, new Date(h.tick), 300).getTime()).toBe(5);
    // Fire order differs from tick order: the point of the test.
    expect(handled.map((h) => h.tick)).not.toEqual(expected);
  });
});

describe('dueTicks, one pass at a time', () => {
  const s: Schedule = {
    id: 99,
    kind: 'Interval',
    intervalSeconds: 10,
    timeZone: 'UTC',
    runAt: null,
    cronExpression: null,
    jitterSeconds: 60,
    catchupPolicy: 'All',
    catchupMax: 100,
  };
  const T0 = new Date('2030-01-01T00:00:00Z');
  const fire = (t: number) => jitteredFireAt(s.id, new Date(t), s.jitterSeconds).getTime();

  it('nextRunAt is the earliest fire time of any unhandled tick, not that of the next tick', () => {
    const plan = planFrom(s, T0);
    const ticks = Array.from({ length: 7 }, (_, k) => T0.getTime() + (k + 1) * 10_000);
    expect(plan.nextTickAt).toEqual(new Date(ticks[0]!));
    expect(plan.nextRunAt).toEqual(new Date(Math.min(...ticks.map(fire))));
  });

  it('leaves the ticks it handled ahead of an earlier one alone on the next pass', () => {
    const first = planFrom(s, T0);
    const now = new Date(T0.getTime() + 45_000);
    const a = dueTicks(stored(s, first), now, GRACE_SECONDS)!;
    const fired = a.scheduled.map((d) => d.getTime());
    expect(fired).toEqual(
      [10_000, 20_000, 30_000, 40_000]
        .map((d) => T0.getTime() + d)
        .filter((t) => fire(t) <= now.getTime()),
    );
    // The same instant again (a second replica, or a retried pass): nothing new.
    const again = dueTicks(stored(s, a), now, GRACE_SECONDS)!;
    expect(again.scheduled).toEqual([]);
    expect(again.catchup).toEqual([]);
    // A replica whose clock is behind does not fire what was handled ahead of it either.
    const behind = dueTicks(stored(s, a), new Date(now.getTime() - 5_000), GRACE_SECONDS)!;
    expect(behind.scheduled.filter((t) => fired.includes(t.getTime()))).toEqual([]);
    expect(behind.handledThrough).toEqual(a.handledThrough);
  });

  it('a tick handled more than the grace after its own fire time is missed, each tick judged on its own', () => {
    const plan = planFrom(s, T0);
    const now = new Date(T0.getTime() + 200_000);
    const due = dueTicks(stored(s, plan), now, GRACE_SECONDS)!;
    const all = [...due.catchup, ...due.scheduled].map((d) => d.getTime());
    for (const t of due.scheduled)
      expect(now.getTime() - fire(t.getTime())).toBeLessThanOrEqual(GRACE_SECONDS * 1000);
    for (const t of due.catchup)
      expect(now.getTime() - fire(t.getTime())).toBeGreaterThan(GRACE_SECONDS * 1000);
    expect(due.missed).toBe(due.catchup.length);
    // Every tick that fires by now is handled once, missed or not.
    for (let t = T0.getTime() + 10_000; t <= now.getTime(); t += 10_000)
      expect(all.includes(t)).toBe(fire(t) <= now.getTime());
  });

  it('a long outage is counted without walking it, keeping the latest catchupMax', () => {
    const plan = planFrom(s, T0);
    const now = new Date(T0.getTime() + 5 * 365 * 86_400_000);
    const due = dueTicks(stored({ ...s, catchupMax: 3 }, plan), now, GRACE_SECONDS)!;
    expect(due.catchup).toHaveLength(3);
    expect(due.missed).toBeGreaterThan(5 * 365 * 8640 - 20);
    expect(due.nextRunAt!.getTime()).toBeGreaterThan(now.getTime());
    expect(due.nextTickAt!.getTime()).toBeGreaterThan(now.getTime() - 60_000);
  });

  it('a Once schedule with jitter waits for its fire time, then has nothing left', () => {
    const once: Schedule = {
      ...s,
      kind: 'Once',
      intervalSeconds: null,
      runAt: new Date(T0.getTime() + 30_000),
    };
    const plan = planFrom(once, T0);
    const at = fire(T0.getTime() + 30_000);
    expect(plan.nextRunAt).toEqual(new Date(at));
    expect(dueTicks(stored(once, plan), new Date(at - 1), GRACE_SECONDS)!.scheduled).toEqual([]);
    const due = dueTicks(stored(once, plan), new Date(at), GRACE_SECONDS)!;
    expect(due.scheduled).toEqual([once.runAt]);
    expect(due).toMatchObject({ nextTickAt: null, nextRunAt: null, handledThrough: null });
  });
});
