// Which ticks a pass handles (addendum §14.3, §14.4, §14.6): pure, so checked without a database.
import { describe, expect, it } from 'vitest';
import { jitterOffsetMs } from '@po/domain';
import type { ScheduleRecord } from '@po/db';
import { dueTicks, replanFrom } from './due-ticks.js';

const T0 = new Date('2030-03-04T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const iso = (ds: Date[]) => ds.map((d) => d.toISOString());

function schedule(over: Partial<ScheduleRecord>): ScheduleRecord {
  const base = {
    id: 7,
    kind: 'Interval' as const,
    cronExpression: null,
    intervalSeconds: 60,
    runAt: null,
    timeZone: 'UTC',
    jitterSeconds: 0,
    catchupPolicy: 'None',
    catchupMax: 10,
  };
  const planned = replanFrom({ ...base, ...over }, over.planAnchor ?? T0);
  return { ...base, ...planned, ...over } as ScheduleRecord;
}

describe('dueTicks', () => {
  it('handles the stored next tick when its fire time has come, and moves to the next one', () => {
    const due = dueTicks(schedule({}), at(60_000), 60)!;
    expect(iso(due.scheduled)).toEqual([at(60_000).toISOString()]);
    expect(due).toMatchObject({ catchup: [], missed: 0, anchor: at(60_000), nextTickAt: at(120_000), nextRunAt: at(120_000) });
  });

  it('fires every tick within the misfire grace as Scheduled', () => {
    const due = dueTicks(schedule({ intervalSeconds: 10 }), at(65_000), 60)!;
    expect(due.scheduled).toHaveLength(6);
    expect(due.missed).toBe(0);
    expect(due.nextTickAt).toEqual(at(70_000));
  });

  it.each([
    ['None', 10, []],
    ['One', 10, [300_000]],
    ['All', 10, [60_000, 120_000, 180_000, 240_000, 300_000]],
    ['All', 2, [240_000, 300_000]],
  ] as const)('catch-up %s (catchupMax %d) over missed ticks', (policy, catchupMax, expected) => {
    const due = dueTicks(schedule({ catchupPolicy: policy, catchupMax }), at(370_000), 60)!;
    expect(due.missed).toBe(5);
    expect(iso(due.catchup)).toEqual(expected.map((ms) => at(ms).toISOString()));
    expect(iso(due.scheduled)).toEqual([at(360_000).toISOString()]); // 10 s late: within the grace
    expect(due.nextTickAt).toEqual(at(420_000));
    expect(due.anchor).toEqual(at(360_000));
  });

  it('waits for a tick whose jittered fire time is still ahead', () => {
    const s = schedule({ jitterSeconds: 30 });
    const offset = jitterOffsetMs(7, at(60_000), 30);
    expect(s.nextRunAt).toEqual(at(60_000 + offset));
    const due = dueTicks({ ...s, nextTickAt: at(60_000) }, at(60_000 + offset), 60)!;
    expect(iso(due.scheduled)).toEqual([at(60_000).toISOString()]);
    expect(due.nextRunAt).toEqual(at(120_000 + jitterOffsetMs(7, at(120_000), 30)));
  });

  it('counts a long outage in bulk and keeps only the latest catchupMax', () => {
    const s = schedule({ intervalSeconds: 10, catchupPolicy: 'All', catchupMax: 3 });
    const now = at(10 * 365 * 86_400_000);
    const due = dueTicks(s, now, 60)!;
    // The ticks of the last 60 s (now − 60 s .. now, 7 of them) are within the grace.
    expect(due.missed).toBe(10 * 365 * 8640 - 7);
    expect(iso(due.catchup)).toEqual([-90_000, -80_000, -70_000].map((d) => new Date(now.getTime() + d).toISOString()));
    expect(due.scheduled).toHaveLength(7);
    expect(due.nextTickAt).toEqual(new Date(now.getTime() + 10_000));
  });

  it('handles a Once tick and then has nothing left', () => {
    const s = schedule({ kind: 'Once', intervalSeconds: null, runAt: at(30_000) });
    const due = dueTicks(s, at(31_000), 60)!;
    expect(iso(due.scheduled)).toEqual([at(30_000).toISOString()]);
    expect(due).toMatchObject({ nextTickAt: null, nextRunAt: null });
  });

  it('plans Cron ticks in the time zone, in local minutes', () => {
    const s = schedule({ kind: 'Cron', intervalSeconds: null, cronExpression: '30 2 * * *', timeZone: 'Europe/Berlin', planAnchor: new Date('2030-03-30T12:00:00Z') });
    // 2030-03-31 is the spring-forward day in Berlin: 02:30 does not exist and fires at 03:30 CEST.
    expect(s.nextTickAt!.toISOString()).toBe('2030-03-31T01:30:00.000Z');
    const due = dueTicks(s, new Date('2030-03-31T01:30:00Z'), 60)!;
    expect(due.nextTickAt!.toISOString()).toBe('2030-04-01T00:30:00.000Z');
  });

  it('is null without a stored next tick', () => {
    expect(dueTicks({ ...schedule({}), nextTickAt: null }, at(60_000), 60)).toBeNull();
  });
});
