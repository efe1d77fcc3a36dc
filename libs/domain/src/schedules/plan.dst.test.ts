import { describe, expect, it } from 'vitest';
import type { PlanInput } from './plan.js';
import { nextTick, ticksBetween } from './plan.js';

const EPOCH = new Date(0);
const cron = (cronExpression: string, timeZone: string): PlanInput => ({
  kind: 'Cron',
  cronExpression,
  timeZone,
});

/** `count` ticks after `after`, by iterating nextTick, as ISO strings. */
function ticks(plan: PlanInput, after: string, count: number): string[] {
  const out: string[] = [];
  let t: Date | null = new Date(after);
  while (out.length < count) {
    t = nextTick(plan, EPOCH, t);
    if (t === null) break;
    out.push(t.toISOString());
  }
  return out;
}

/** The same ticks through ticksBetween, which must agree. */
function between(plan: PlanInput, after: string, until: string): string[] {
  return ticksBetween(plan, EPOCH, new Date(after), new Date(until), 10_000).ticks.map((t) =>
    t.toISOString(),
  );
}

describe('§14.3 acceptance: spring forward (nonexistent local time)', () => {
  it('30 2 * * * in Europe/Berlin: after 2026-03-28T12:00Z comes 03:30 local on 03-29 (01:30Z), once', () => {
    const plan = cron('30 2 * * *', 'Europe/Berlin');
    expect(nextTick(plan, EPOCH, new Date('2026-03-28T12:00:00Z'))?.toISOString()).toBe(
      '2026-03-29T01:30:00.000Z',
    );
    expect(ticks(plan, '2026-03-27T12:00:00Z', 4)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 02:30 does not exist: shifted by the 1 h gap to 03:30 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  it('America/New_York 2026-03-08, fixed hour: 30 2 * * * fires once at 03:30 EDT', () => {
    expect(ticks(cron('30 2 * * *', 'America/New_York'), '2026-03-07T12:00:00Z', 3)).toEqual([
      '2026-03-08T07:30:00.000Z', // 03:30 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
      '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('America/New_York 2026-03-08, wildcard hour: 0 * * * * has no extra or missing instant', () => {
    expect(ticks(cron('0 * * * *', 'America/New_York'), '2026-03-08T05:30:00Z', 4)).toEqual([
      '2026-03-08T06:00:00.000Z', // 01:00 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT; the shifted 02:00 is the same instant and fires once
      '2026-03-08T08:00:00.000Z', // 04:00 EDT
      '2026-03-08T09:00:00.000Z',
    ]);
  });

  it('*/15 * * * * across the Berlin gap: the shifted 02:xx ticks coincide with 03:xx and fire once', () => {
    const plan = cron('*/15 * * * *', 'Europe/Berlin');
    const expected = ['00:30', '00:45', '01:00', '01:15', '01:30', '01:45', '02:00'].map(
      (hm) => `2026-03-29T${hm}:00.000Z`,
    );
    expect(ticks(plan, '2026-03-29T00:15:00Z', 7)).toEqual(expected);
    expect(between(plan, '2026-03-29T00:15:00Z', '2026-03-29T02:00:00Z')).toEqual(expected);
  });

  it('several local times mapping to one instant fire once: 0,30 2,3 * * * in Berlin', () => {
    expect(ticks(cron('0,30 2,3 * * *', 'Europe/Berlin'), '2026-03-28T22:00:00Z', 3)).toEqual([
      '2026-03-29T01:00:00.000Z', // 02:00 → 03:00 CEST and 03:00 CEST itself
      '2026-03-29T01:30:00.000Z', // 02:30 → 03:30 CEST and 03:30 CEST itself
      '2026-03-30T00:00:00.000Z', // 02:00 CEST the next day
    ]);
  });

  it('a 30-minute gap (Australia/Lord_Howe 2026-10-04, 02:00 → 02:30) shifts by 30 minutes, in instant order', () => {
    expect(ticks(cron('15,40 2 * * *', 'Australia/Lord_Howe'), '2026-10-03T12:00:00Z', 3)).toEqual([
      '2026-10-03T15:40:00.000Z', // 02:40 +11:00
      '2026-10-03T15:45:00.000Z', // 02:15 does not exist: 02:45 +11:00
      '2026-10-04T15:15:00.000Z', // 02:15 +11:00 the next day
    ]);
  });
});

describe('§14.3 acceptance: fall back (repeated local hour)', () => {
  it('30 1 * * * in America/New_York on 2026-11-01 fires once, at the first 01:30 (05:30Z); then 2026-11-02 01:30', () => {
    const plan = cron('30 1 * * *', 'America/New_York');
    expect(ticks(plan, '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; the 01:30 EST copy (06:30Z) does not fire
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
    expect(nextTick(plan, EPOCH, new Date('2026-11-01T05:30:00Z'))?.toISOString()).toBe(
      '2026-11-02T06:30:00.000Z',
    );
    expect(between(plan, '2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z')).toEqual([
      '2026-11-01T05:30:00.000Z',
    ]);
  });

  it('0 * * * * in America/New_York on 2026-11-01 fires in both copies: 05:00Z (01:00 EDT) and 06:00Z (01:00 EST)', () => {
    expect(ticks(cron('0 * * * *', 'America/New_York'), '2026-11-01T03:30:00Z', 5)).toEqual([
      '2026-11-01T04:00:00.000Z', // 00:00 EDT
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T06:00:00.000Z', // 01:00 EST
      '2026-11-01T07:00:00.000Z', // 02:00 EST
      '2026-11-01T08:00:00.000Z',
    ]);
  });

  it('*/15 * * * * across the New York fall-back: every real quarter hour, none twice', () => {
    const got = between(
      cron('*/15 * * * *', 'America/New_York'),
      '2026-11-01T04:50:00Z',
      '2026-11-01T07:10:00Z',
    );
    const expected: string[] = [];
    for (
      let t = Date.parse('2026-11-01T05:00:00Z');
      t <= Date.parse('2026-11-01T07:00:00Z');
      t += 900_000
    ) {
      expected.push(new Date(t).toISOString());
    }
    expect(got).toEqual(expected); // 01:00..01:45 EDT, 01:00..01:45 EST, 02:00 EST: 9 ticks, 15 minutes apart
  });

  it('Europe/Berlin 2026-10-25 (03:00 → 02:00): fixed 30 2 * * * once at the CEST copy, hourly twice', () => {
    expect(ticks(cron('30 2 * * *', 'Europe/Berlin'), '2026-10-24T12:00:00Z', 2)).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST; 02:30 CET (01:30Z) does not fire
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
    expect(
      between(cron('30 * * * *', 'Europe/Berlin'), '2026-10-24T23:00:00Z', '2026-10-25T02:00:00Z'),
    ).toEqual([
      '2026-10-24T23:30:00.000Z', // 01:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('*/15 * * * * across the Berlin fall-back keeps a 15-minute cadence', () => {
    const got = between(
      cron('*/15 * * * *', 'Europe/Berlin'),
      '2026-10-24T23:50:00Z',
      '2026-10-25T01:50:00Z',
    );
    expect(got).toHaveLength(8);
    got.forEach((t, i) =>
      expect(Date.parse(t)).toBe(Date.parse('2026-10-25T00:00:00Z') + i * 900_000),
    );
  });

  it('a fixed hour given as a list or range also fires once per repeated wall time', () => {
    expect(
      between(
        cron('0 1,2 * * *', 'America/New_York'),
        '2026-11-01T00:00:00Z',
        '2026-11-01T12:00:00Z',
      ),
    ).toEqual([
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T07:00:00.000Z', // 02:00 EST
    ]);
  });

  it('planning never moves backwards, even when the wall clock does', () => {
    const plan = cron('*/5 * * * *', 'America/New_York');
    const got = ticks(plan, '2026-11-01T04:00:00Z', 60);
    for (let i = 1; i < got.length; i++)
      expect(Date.parse(got[i] as string)).toBe(Date.parse(got[i - 1] as string) + 300_000);
  });
});
