import { describe, expect, it } from 'vitest';
import type { PlanInput } from './plan.js';
import { nextTick, ticksBetween } from './plan.js';

const NOW = new Date('2026-01-10T12:00:00.000Z');
const EPOCH = new Date(0);
const iso = (d: Date | null): string | null => d?.toISOString() ?? null;
const at = (s: string): Date => new Date(s);

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
