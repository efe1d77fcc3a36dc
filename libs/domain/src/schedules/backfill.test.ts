import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BACKFILL_MAX_TICKS,
  COUNT_DAYS_LIMIT,
  COUNT_TICKS_LIMIT,
  backfillTicks,
  type BackfillTicks,
} from './backfill.js';
import type { PlanInput } from './plan.js';
import { ticksBetween } from './plan.js';

const EPOCH = new Date(0);
const cron = (cronExpression: string, timeZone = 'UTC'): PlanInput => ({
  kind: 'Cron',
  cronExpression,
  timeZone,
});
const interval = (intervalSeconds: number): PlanInput => ({
  kind: 'Interval',
  intervalSeconds,
  timeZone: 'UTC',
});
const once = (runAt: string): PlanInput => ({
  kind: 'Once',
  runAt: new Date(runAt),
  timeZone: 'UTC',
});

function isoTicks(result: BackfillTicks): string[] {
  if (!result.ok) throw new Error(`expected ticks, got ${JSON.stringify(result)}`);
  return result.ticks.map((t) => t.toISOString());
}
const range = (plan: PlanInput, from: string, to: string, anchor: Date = EPOCH) =>
  isoTicks(backfillTicks(plan, anchor, new Date(from), new Date(to)));

describe('Interval and @every: anchor + k × interval for every integer k', () => {
  const anchor = new Date('2030-03-04T10:00:07.000Z');

  it('extends backwards from the anchor: ticks before it are in the plan too', () => {
    expect(range(interval(60), '2030-03-04T09:57:00Z', '2030-03-04T10:02:00Z', anchor)).toEqual([
      '2030-03-04T09:57:07.000Z',
      '2030-03-04T09:58:07.000Z',
      '2030-03-04T09:59:07.000Z',
      '2030-03-04T10:00:07.000Z', // the anchor itself (k = 0)
      '2030-03-04T10:01:07.000Z',
    ]);
  });

  it('[from, to): a tick at from is in, a tick at to is out', () => {
    expect(range(interval(60), '2030-03-04T09:59:07Z', '2030-03-04T10:01:07Z', anchor)).toEqual([
      '2030-03-04T09:59:07.000Z',
      '2030-03-04T10:00:07.000Z',
    ]);
  });

  it('@every counts elapsed time from the anchor and ignores the zone', () => {
    const every = { ...cron('@every 90s'), timeZone: 'Europe/Berlin' };
    expect(range(every, '2030-03-04T09:57:00Z', '2030-03-04T10:01:00Z', anchor)).toEqual([
      '2030-03-04T09:57:07.000Z',
      '2030-03-04T09:58:37.000Z',
      '2030-03-04T10:00:07.000Z',
    ]);
  });

  it('agrees with ticksBetween after the anchor (its (after, until] is [from, to) shifted by 1 ms)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 100_000 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        (seconds, start, length) => {
          const from = anchor.getTime() + 1 + start;
          const to = from + length;
          const plan = interval(seconds);
          const expected = ticksBetween(plan, anchor, new Date(from - 1), new Date(to - 1), 2000);
          const got = backfillTicks(plan, anchor, new Date(from), new Date(to), 2000);
          if (expected.total > 2000)
            return !got.ok && got.reason === 'too_many' && got.count === expected.total;
          return got.ok && got.ticks.map(Number).join() === expected.ticks.map(Number).join();
        },
      ),
    );
  });

  it('counts an over-long range exactly, without listing it', () => {
    const year = backfillTicks(
      interval(10),
      anchor,
      new Date('2030-01-01T00:00:00Z'),
      new Date('2031-01-01T00:00:00Z'),
    );
    expect(year).toEqual({ ok: false, reason: 'too_many', count: 3_153_600, exact: true });
    const all = backfillTicks(
      interval(10),
      anchor,
      new Date('0001-01-01T00:00:00Z'),
      new Date('9999-12-31T23:59:59.999Z'),
    );
    expect(all.ok).toBe(false);
    expect(!all.ok && all.reason === 'too_many' && all.exact && all.count > 3e10).toBe(true);
  });
});

describe('Once: its runAt when inside [from, to)', () => {
  const plan = once('2030-03-04T12:00:00Z');
  it.each([
    ['inside', '2030-03-04T11:00:00Z', '2030-03-04T13:00:00Z', ['2030-03-04T12:00:00.000Z']],
    [
      'at from (inclusive)',
      '2030-03-04T12:00:00Z',
      '2030-03-04T13:00:00Z',
      ['2030-03-04T12:00:00.000Z'],
    ],
    ['at to (exclusive)', '2030-03-04T11:00:00Z', '2030-03-04T12:00:00Z', []],
    ['before', '2030-03-04T12:00:01Z', '2030-03-05T00:00:00Z', []],
  ])('%s', (_label, from, to, expected) => {
    expect(range(plan, from, to)).toEqual(expected);
  });
});

describe('empty ranges', () => {
  it('from == to, or to before from, has no ticks', () => {
    for (const plan of [cron('* * * * *'), interval(10), once('2030-01-01T00:00:00Z')]) {
      expect(range(plan, '2030-01-01T00:00:00Z', '2030-01-01T00:00:00Z')).toEqual([]);
      expect(range(plan, '2030-01-01T00:01:00Z', '2030-01-01T00:00:00Z')).toEqual([]);
    }
  });

  it('a range between two ticks has none', () => {
    expect(range(cron('0 9 * * *'), '2030-01-01T10:00:00Z', '2030-01-02T09:00:00Z')).toEqual([]);
  });
});

describe('Cron: the schedule zone and the DST rules of §14.3 (docs/schedules.md tables)', () => {
  it('every matching minute in [from, to)', () => {
    expect(range(cron('*/15 * * * *'), '2030-01-01T00:00:00Z', '2030-01-01T01:00:00Z')).toEqual([
      '2030-01-01T00:00:00.000Z',
      '2030-01-01T00:15:00.000Z',
      '2030-01-01T00:30:00.000Z',
      '2030-01-01T00:45:00.000Z',
    ]);
  });

  it('Europe/Berlin spring forward 2030-03-31: 30 2 * * * fires at 03:30 CEST, once', () => {
    const plan = cron('30 2 * * *', 'Europe/Berlin');
    expect(range(plan, '2030-03-30T00:00:00Z', '2030-04-02T00:00:00Z')).toEqual([
      '2030-03-30T01:30:00.000Z',
      '2030-03-31T01:30:00.000Z', // 02:30 does not exist: 03:30 CEST
      '2030-04-01T00:30:00.000Z',
    ]);
  });

  it('Europe/Berlin spring forward: 0 * * * * has the missing 02:00 once, at 03:00', () => {
    const plan = cron('0 * * * *', 'Europe/Berlin');
    expect(range(plan, '2030-03-31T00:00:00Z', '2030-03-31T03:00:00Z')).toEqual([
      '2030-03-31T00:00:00.000Z', // 01:00 CET
      '2030-03-31T01:00:00.000Z', // 03:00 CEST (and the shifted 02:00)
      '2030-03-31T02:00:00.000Z', // 04:00 CEST
    ]);
  });

  it('Europe/Berlin fall back 2030-10-27: 30 2 * * * fires at the first 02:30 only', () => {
    const plan = cron('30 2 * * *', 'Europe/Berlin');
    expect(range(plan, '2030-10-26T00:00:00Z', '2030-10-29T00:00:00Z')).toEqual([
      '2030-10-26T00:30:00.000Z',
      '2030-10-27T00:30:00.000Z', // 02:30 CEST; 02:30 CET does not fire
      '2030-10-28T01:30:00.000Z',
    ]);
  });

  it('Europe/Berlin fall back: 0 * * * * fires in both copies of the repeated hour', () => {
    const plan = cron('0 * * * *', 'Europe/Berlin');
    expect(range(plan, '2030-10-26T23:00:00Z', '2030-10-27T03:00:00Z')).toEqual([
      '2030-10-26T23:00:00.000Z', // 01:00 CEST
      '2030-10-27T00:00:00.000Z', // 02:00 CEST
      '2030-10-27T01:00:00.000Z', // 02:00 CET
      '2030-10-27T02:00:00.000Z', // 03:00 CET
    ]);
  });

  it('America/New_York fall back 2030-11-03: 30 1 * * * fires once, at 01:30 EDT', () => {
    const plan = cron('30 1 * * *', 'America/New_York');
    expect(range(plan, '2030-11-03T00:00:00Z', '2030-11-05T00:00:00Z')).toEqual([
      '2030-11-03T05:30:00.000Z',
      '2030-11-04T06:30:00.000Z',
    ]);
  });

  it('agrees with ticksBetween on every zone and range tried', () => {
    const zones = [
      'UTC',
      'Europe/Berlin',
      'America/New_York',
      'Australia/Lord_Howe',
      'America/Santiago',
    ];
    const expressions = ['30 2 * * *', '0 * * * *', '*/20 1-3 * * *', '15 0 * * 0', '0 0 1 * *'];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.constantFrom(...expressions),
        fc.integer({ min: Date.UTC(2029, 0, 1), max: Date.UTC(2031, 0, 1) }),
        fc.integer({ min: 0, max: 20 * 86_400_000 }),
        (zone, expression, from, length) => {
          const plan = cron(expression, zone);
          const to = from + length;
          const expected = ticksBetween(plan, EPOCH, new Date(from - 1), new Date(to - 1), 5000);
          const got = backfillTicks(plan, EPOCH, new Date(from), new Date(to), 5000);
          return got.ok && got.ticks.map(Number).join() === expected.ticks.map(Number).join();
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('at most BACKFILL_MAX_TICKS (1000) ticks', () => {
  it('exactly 1000 ticks are listed; 1001 are refused with their count', () => {
    const from = new Date('2030-01-01T00:00:00Z');
    const ok = backfillTicks(
      cron('* * * * *'),
      EPOCH,
      from,
      new Date(from.getTime() + 1000 * 60_000),
    );
    expect(ok.ok && ok.ticks.length).toBe(BACKFILL_MAX_TICKS);
    expect(
      backfillTicks(cron('* * * * *'), EPOCH, from, new Date(from.getTime() + 1001 * 60_000)),
    ).toEqual({ ok: false, reason: 'too_many', count: 1001, exact: true });
  });

  it('a Cron range is counted exactly while the walk is short (a day of minutes: 1440)', () => {
    expect(
      backfillTicks(
        cron('* * * * *'),
        EPOCH,
        new Date('2030-01-01T00:00:00Z'),
        new Date('2030-01-02T00:00:00Z'),
      ),
    ).toEqual({ ok: false, reason: 'too_many', count: 1440, exact: true });
  });

  it('a long Cron range stops counting: dense expressions after COUNT_TICKS_LIMIT ticks', () => {
    const result = backfillTicks(
      cron('* * * * *', 'Europe/Berlin'),
      EPOCH,
      new Date('0001-01-01T00:00:00Z'),
      new Date('9999-12-31T23:59:59.999Z'),
    );
    expect(result).toEqual({
      ok: false,
      reason: 'too_many',
      count: COUNT_TICKS_LIMIT,
      exact: false,
    });
  });

  it('sparse expressions after COUNT_DAYS_LIMIT days with ticks', () => {
    const result = backfillTicks(
      cron('0 9 * * *', 'America/New_York'),
      EPOCH,
      new Date('2030-01-01T00:00:00Z'),
      new Date('2130-01-01T00:00:00Z'),
    );
    expect(result).toEqual({
      ok: false,
      reason: 'too_many',
      count: COUNT_DAYS_LIMIT,
      exact: false,
    });
  });

  it('a smaller max applies the same way; max 0 refuses any tick', () => {
    const from = new Date('2030-01-01T00:00:00Z');
    const to = new Date('2030-01-01T00:05:00Z');
    expect(backfillTicks(cron('* * * * *'), EPOCH, from, to, 5)).toMatchObject({ ok: true });
    expect(backfillTicks(cron('* * * * *'), EPOCH, from, to, 4)).toMatchObject({
      count: 5,
      exact: true,
    });
    expect(backfillTicks(once('2030-01-01T00:01:00Z'), EPOCH, from, to, 0)).toMatchObject({
      count: 1,
    });
  });
});

describe('a plan that cannot be computed', () => {
  it.each([
    ['an unknown zone', cron('0 * * * *', 'Atlantis/Capital')],
    ['an expression that does not parse', cron('0 0 * * * *')],
    ['a missing interval', { kind: 'Interval', timeZone: 'UTC' } as PlanInput],
    ['a missing runAt', { kind: 'Once', timeZone: 'UTC' } as PlanInput],
  ])('%s → not_plannable', (_label, plan) => {
    expect(
      backfillTicks(
        plan,
        EPOCH,
        new Date('2030-01-01T00:00:00Z'),
        new Date('2030-01-02T00:00:00Z'),
      ),
    ).toEqual({ ok: false, reason: 'not_plannable' });
  });
});
