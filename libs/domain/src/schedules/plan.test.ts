import { describe, expect, it } from 'vitest';
import type { PlanInput } from './plan.js';
import { isKnownTimeZone, nextTick, ticksBetween, validatePlan } from './plan.js';

const NOW = new Date('2026-01-10T12:00:00.000Z');
const EPOCH = new Date(0);
const iso = (d: Date | null): string | null => d?.toISOString() ?? null;
const at = (s: string): Date => new Date(s);

describe('isKnownTimeZone', () => {
  it('accepts IANA ids the server knows, links included', () => {
    for (const z of [
      'UTC',
      'Etc/UTC',
      'Europe/Berlin',
      'America/Argentina/Buenos_Aires',
      'Asia/Calcutta',
      'Etc/GMT+5',
      'US/Eastern',
    ]) {
      expect(isKnownTimeZone(z), z).toBe(true);
    }
  });
  it('rejects unknown ids, offsets and junk', () => {
    for (const z of [
      '',
      'Mars/Olympus',
      'Europe/Berlinx',
      '+01:00',
      'GMT+1:00',
      '../etc/passwd',
      'Europe/ Berlin',
      'x'.repeat(65),
    ]) {
      expect(isKnownTimeZone(z), z).toBe(false);
    }
  });
});

describe('validatePlan (§14.1, §14.2)', () => {
  const base = { timeZone: 'UTC' };

  it('Cron: needs cronExpression; intervalSeconds and runAt must be absent or null', () => {
    expect(validatePlan({ ...base, kind: 'Cron', cronExpression: '0 0 * * *' }, NOW)).toEqual([]);
    expect(
      validatePlan(
        { ...base, kind: 'Cron', cronExpression: '0 0 * * *', intervalSeconds: null, runAt: null },
        NOW,
      ),
    ).toEqual([]);
    expect(
      validatePlan(
        {
          ...base,
          kind: 'Cron',
          cronExpression: null,
          intervalSeconds: 60,
          runAt: at('2027-01-01T00:00:00Z'),
        },
        NOW,
      ),
    ).toEqual([
      { field: '/cronExpression', message: 'is required when kind is Cron' },
      { field: '/intervalSeconds', message: 'must be absent or null when kind is Cron' },
      { field: '/runAt', message: 'must be absent or null when kind is Cron' },
    ]);
  });

  it('Cron: dialect errors at /cronExpression', () => {
    expect(validatePlan({ ...base, kind: 'Cron', cronExpression: '0 0 * * * *' }, NOW)).toEqual([
      {
        field: '/cronExpression',
        message:
          'expected 5 fields (minute hour day-of-month month day-of-week), got 6; seconds and year fields are not supported',
      },
    ]);
    expect(validatePlan({ ...base, kind: 'Cron', cronExpression: '61 * * * *' }, NOW)).toEqual([
      { field: '/cronExpression', message: 'minute field: 61 is out of range 0-59' },
    ]);
  });

  it('Cron: an expression with no occurrence within 5 years is rejected', () => {
    for (const e of ['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 31 FEB *']) {
      expect(validatePlan({ ...base, kind: 'Cron', cronExpression: e }, NOW)).toEqual([
        { field: '/cronExpression', message: 'has no occurrence within 5 years' },
      ]);
    }
    // 29 February comes back within 5 years, and the Vixie OR makes 30 2 with a weekday possible.
    expect(validatePlan({ ...base, kind: 'Cron', cronExpression: '0 0 29 2 *' }, NOW)).toEqual([]);
    expect(validatePlan({ ...base, kind: 'Cron', cronExpression: '0 0 30 2 MON' }, NOW)).toEqual(
      [],
    );
    expect(validatePlan({ ...base, kind: 'Cron', cronExpression: '@every 10s' }, NOW)).toEqual([]);
  });

  it('Cron: the 5-year check stays fast for impossible expressions', () => {
    const started = performance.now();
    for (let i = 0; i < 200; i++)
      validatePlan(
        { ...base, kind: 'Cron', cronExpression: '0 0 31 2 *', timeZone: 'Europe/Berlin' },
        NOW,
      );
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('timeZone must be a known IANA id, for every kind', () => {
    const err = {
      field: '/timeZone',
      message: 'must be a known IANA time zone id, such as Europe/Berlin',
    };
    expect(
      validatePlan({ kind: 'Cron', cronExpression: '0 0 * * *', timeZone: 'Mars/Base' }, NOW),
    ).toEqual([err]);
    expect(validatePlan({ kind: 'Interval', intervalSeconds: 60, timeZone: 'nope' }, NOW)).toEqual([
      err,
    ]);
    expect(
      validatePlan({ kind: 'Once', runAt: at('2026-02-01T00:00:00Z'), timeZone: '+02:00' }, NOW),
    ).toEqual([err]);
  });

  it('Interval: needs intervalSeconds in 10..31536000; the others must be absent or null', () => {
    expect(validatePlan({ ...base, kind: 'Interval', intervalSeconds: 10 }, NOW)).toEqual([]);
    expect(validatePlan({ ...base, kind: 'Interval', intervalSeconds: 31_536_000 }, NOW)).toEqual(
      [],
    );
    const range = { field: '/intervalSeconds', message: 'must be an integer from 10 to 31536000' };
    expect(validatePlan({ ...base, kind: 'Interval', intervalSeconds: 9 }, NOW)).toEqual([range]);
    expect(validatePlan({ ...base, kind: 'Interval', intervalSeconds: 31_536_001 }, NOW)).toEqual([
      range,
    ]);
    expect(validatePlan({ ...base, kind: 'Interval', intervalSeconds: 10.5 }, NOW)).toEqual([
      range,
    ]);
    expect(
      validatePlan({ ...base, kind: 'Interval', cronExpression: '@hourly', runAt: NOW }, NOW),
    ).toEqual([
      { field: '/cronExpression', message: 'must be absent or null when kind is Interval' },
      { field: '/intervalSeconds', message: 'is required when kind is Interval' },
      { field: '/runAt', message: 'must be absent or null when kind is Interval' },
    ]);
  });

  it('Once: needs runAt later than now, unless it equals the stored runAt', () => {
    const future = at('2026-01-10T12:00:00.001Z');
    expect(validatePlan({ ...base, kind: 'Once', runAt: future }, NOW)).toEqual([]);
    const past = { field: '/runAt', message: 'must be in the future' };
    expect(validatePlan({ ...base, kind: 'Once', runAt: NOW }, NOW)).toEqual([past]);
    expect(validatePlan({ ...base, kind: 'Once', runAt: at('2025-01-01T00:00:00Z') }, NOW)).toEqual(
      [past],
    );
    // Re-applying an unchanged Once body after it fired is not an error; another past instant is.
    const stored = at('2025-01-01T00:00:00.000Z');
    expect(
      validatePlan({ ...base, kind: 'Once', runAt: at('2025-01-01T01:00:00+01:00') }, NOW, stored),
    ).toEqual([]);
    expect(
      validatePlan({ ...base, kind: 'Once', runAt: at('2025-01-02T00:00:00Z') }, NOW, stored),
    ).toEqual([past]);
    expect(validatePlan({ ...base, kind: 'Once', runAt: new Date(Number.NaN) }, NOW)).toEqual([
      { field: '/runAt', message: 'must be a valid date-time' },
    ]);
    expect(
      validatePlan({ ...base, kind: 'Once', cronExpression: '@daily', intervalSeconds: 60 }, NOW),
    ).toEqual([
      { field: '/cronExpression', message: 'must be absent or null when kind is Once' },
      { field: '/intervalSeconds', message: 'must be absent or null when kind is Once' },
      { field: '/runAt', message: 'is required when kind is Once' },
    ]);
  });
});

describe('nextTick', () => {
  it('Cron in UTC, the Vixie day rule and day-of-week names', () => {
    const plan = (cronExpression: string): PlanInput => ({
      kind: 'Cron',
      cronExpression,
      timeZone: 'UTC',
    });
    // 2026-01-10 is a Saturday. Both day fields restricted: the 13th OR a Friday.
    expect(iso(nextTick(plan('0 9 13 * FRI'), EPOCH, NOW))).toBe('2026-01-13T09:00:00.000Z');
    expect(iso(nextTick(plan('0 9 13 * FRI'), EPOCH, at('2026-01-13T09:00:00Z')))).toBe(
      '2026-01-16T09:00:00.000Z',
    );
    // Only one restricted (or a day field starting with *): both must match.
    expect(iso(nextTick(plan('0 9 * * FRI'), EPOCH, NOW))).toBe('2026-01-16T09:00:00.000Z');
    expect(iso(nextTick(plan('0 9 */2 * FRI'), EPOCH, NOW))).toBe('2026-01-23T09:00:00.000Z');
    expect(iso(nextTick(plan('@hourly'), EPOCH, NOW))).toBe('2026-01-10T13:00:00.000Z');
    expect(iso(nextTick(plan('0 0 29 2 *'), EPOCH, NOW))).toBe('2028-02-29T00:00:00.000Z');
    expect(nextTick(plan('0 0 30 2 *'), EPOCH, NOW)).toBeNull();
  });

  it('Cron is strictly after the reference, including on an exact tick', () => {
    const plan: PlanInput = { kind: 'Cron', cronExpression: '* * * * *', timeZone: 'Asia/Kolkata' };
    expect(iso(nextTick(plan, EPOCH, at('2026-01-10T12:00:00.000Z')))).toBe(
      '2026-01-10T12:01:00.000Z',
    );
    expect(iso(nextTick(plan, EPOCH, at('2026-01-10T12:00:59.999Z')))).toBe(
      '2026-01-10T12:01:00.000Z',
    );
    const kolkata: PlanInput = {
      kind: 'Cron',
      cronExpression: '0 9 * * *',
      timeZone: 'Asia/Kolkata',
    };
    expect(iso(nextTick(kolkata, EPOCH, NOW))).toBe('2026-01-11T03:30:00.000Z');
  });

  it('Interval and @every: anchor + k·interval, k ≥ 1, strictly after the reference; the zone is ignored', () => {
    const anchor = at('2026-01-10T12:00:00.000Z');
    const every: PlanInput = {
      kind: 'Interval',
      intervalSeconds: 90,
      timeZone: 'America/New_York',
    };
    expect(iso(nextTick(every, anchor, anchor))).toBe('2026-01-10T12:01:30.000Z');
    expect(iso(nextTick(every, anchor, at('2026-01-10T11:00:00Z')))).toBe(
      '2026-01-10T12:01:30.000Z',
    );
    expect(iso(nextTick(every, anchor, at('2026-01-10T12:01:30.000Z')))).toBe(
      '2026-01-10T12:03:00.000Z',
    );
    expect(iso(nextTick(every, anchor, at('2026-01-10T12:01:29.999Z')))).toBe(
      '2026-01-10T12:01:30.000Z',
    );
    const cronEvery: PlanInput = {
      kind: 'Cron',
      cronExpression: '@every 1h30m',
      timeZone: 'Europe/Berlin',
    };
    expect(iso(nextTick(cronEvery, anchor, at('2026-01-10T15:00:00Z')))).toBe(
      '2026-01-10T16:30:00.000Z',
    );
    // Across a DST change elapsed time counts, not the wall clock.
    const dst = at('2026-03-29T00:00:00Z');
    expect(
      iso(
        nextTick(
          { kind: 'Interval', intervalSeconds: 3600, timeZone: 'Europe/Berlin' },
          dst,
          at('2026-03-29T01:00:00Z'),
        ),
      ),
    ).toBe('2026-03-29T02:00:00.000Z');
  });

  it('Once: runAt while it is later than the reference, then null', () => {
    const once: PlanInput = { kind: 'Once', runAt: at('2026-02-01T00:00:00Z'), timeZone: 'UTC' };
    expect(iso(nextTick(once, EPOCH, NOW))).toBe('2026-02-01T00:00:00.000Z');
    expect(nextTick(once, EPOCH, at('2026-02-01T00:00:00Z'))).toBeNull();
  });

  it('an unplannable input gives null', () => {
    expect(
      nextTick({ kind: 'Cron', cronExpression: 'nope', timeZone: 'UTC' }, EPOCH, NOW),
    ).toBeNull();
    expect(
      nextTick({ kind: 'Cron', cronExpression: '0 0 * * *', timeZone: 'Mars/Base' }, EPOCH, NOW),
    ).toBeNull();
    expect(nextTick({ kind: 'Interval', timeZone: 'UTC' }, EPOCH, NOW)).toBeNull();
    expect(nextTick({ kind: 'Once', runAt: null, timeZone: 'UTC' }, EPOCH, NOW)).toBeNull();
  });
});

describe('ticksBetween', () => {
  it('Interval: (after, until], the latest `limit`, and the total', () => {
    const anchor = at('2026-01-10T00:00:00Z');
    const plan: PlanInput = { kind: 'Interval', intervalSeconds: 600, timeZone: 'UTC' };
    const r = ticksBetween(plan, anchor, anchor, at('2026-01-10T01:00:00Z'), 2);
    expect(r.total).toBe(6);
    expect(r.ticks.map(iso)).toEqual(['2026-01-10T00:50:00.000Z', '2026-01-10T01:00:00.000Z']);
    expect(
      ticksBetween(
        plan,
        anchor,
        at('2026-01-10T00:10:00Z'),
        at('2026-01-10T00:29:59Z'),
        10,
      ).ticks.map(iso),
    ).toEqual(['2026-01-10T00:20:00.000Z']);
    expect(
      ticksBetween(plan, anchor, at('2026-01-10T01:00:00Z'), at('2026-01-10T00:00:00Z'), 10),
    ).toEqual({ ticks: [], total: 0 });
    expect(ticksBetween(plan, anchor, anchor, at('2026-12-31T00:00:00Z'), 0)).toEqual({
      ticks: [],
      total: 355 * 144,
    });
  });

  it('Cron: the latest ones with the total, even over a long outage', () => {
    const plan: PlanInput = {
      kind: 'Cron',
      cronExpression: '* * * * *',
      timeZone: 'Europe/Berlin',
    };
    const r = ticksBetween(plan, EPOCH, at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'), 2);
    expect(r.total).toBe(365 * 1440);
    expect(r.ticks.map(iso)).toEqual(['2026-12-31T23:59:00.000Z', '2027-01-01T00:00:00.000Z']);
  });

  it('Once: the tick when it lies in the range', () => {
    const plan: PlanInput = { kind: 'Once', runAt: at('2026-02-01T00:00:00Z'), timeZone: 'UTC' };
    expect(ticksBetween(plan, EPOCH, NOW, at('2026-02-01T00:00:00Z'), 5)).toEqual({
      ticks: [at('2026-02-01T00:00:00Z')],
      total: 1,
    });
    expect(ticksBetween(plan, EPOCH, NOW, at('2026-01-31T23:59:59Z'), 5)).toEqual({
      ticks: [],
      total: 0,
    });
    expect(
      ticksBetween(plan, EPOCH, at('2026-02-01T00:00:00Z'), at('2026-03-01T00:00:00Z'), 5),
    ).toEqual({ ticks: [], total: 0 });
  });
});
