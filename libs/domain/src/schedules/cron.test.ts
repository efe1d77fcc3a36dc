import { describe, expect, it } from 'vitest';
import type { CronExpression } from './cron.js';
import { parseCron } from './cron.js';

function cron(expression: string): CronExpression {
  const parsed = parseCron(expression);
  if (!parsed.ok || parsed.cron === null)
    throw new Error(`not a cron expression: ${JSON.stringify(parsed)}`);
  return parsed.cron;
}
const range = (a: number, b: number, step = 1): number[] => {
  const out: number[] = [];
  for (let v = a; v <= b; v += step) out.push(v);
  return out;
};
const error = (expression: string): string => {
  const parsed = parseCron(expression);
  if (parsed.ok) throw new Error(`accepted: ${expression}`);
  return parsed.message;
};

describe('parseCron: accepted syntax (§14.2)', () => {
  it('reads the five fields with *, n, a-b, */s, a-b/s, a/s and lists', () => {
    const c = cron('*/15 1-5/2 1,15,20-22 */3 3/2');
    expect(c.minutes).toEqual([0, 15, 30, 45]);
    expect(c.hours).toEqual([1, 3, 5]);
    expect(c.daysOfMonth).toEqual([1, 15, 20, 21, 22]);
    expect(c.months).toEqual([1, 4, 7, 10]);
    expect(c.daysOfWeek).toEqual([0, 3, 5]); // 3, 5, 7 (= Sunday)
    expect(c.source).toBe('*/15 1-5/2 1,15,20-22 */3 3/2');
  });

  it('a/s runs from a to the maximum of the field', () => {
    expect(cron('50/3 * * * *').minutes).toEqual([50, 53, 56, 59]);
  });

  it('month and day names, case-insensitive, also in ranges', () => {
    const c = cron('0 0 * jan-Mar,DEC mon-fri');
    expect(c.months).toEqual([1, 2, 3, 12]);
    expect(c.daysOfWeek).toEqual([1, 2, 3, 4, 5]);
    expect(cron('0 0 * * SUN').daysOfWeek).toEqual([0]);
  });

  it('day-of-week 0 and 7 are both Sunday', () => {
    expect(cron('0 0 * * 7').daysOfWeek).toEqual([0]);
    expect(cron('0 0 * * 5-7').daysOfWeek).toEqual([0, 5, 6]);
    expect(cron('0 0 * * 0,7').daysOfWeek).toEqual([0]);
  });

  it('extra whitespace between and around fields is fine; duplicates collapse', () => {
    expect(cron('  0\t0   * *  *  ').minutes).toEqual([0]);
    expect(cron('5,5,1-5 * * * *').minutes).toEqual([1, 2, 3, 4, 5]);
  });

  it('Vixie flags: a day field starting with * is unrestricted', () => {
    expect(cron('0 0 1 * 1')).toMatchObject({ domRestricted: true, dowRestricted: true });
    expect(cron('0 0 * * 1')).toMatchObject({ domRestricted: false, dowRestricted: true });
    expect(cron('0 0 */2 * *')).toMatchObject({ domRestricted: false, dowRestricted: false });
  });

  it('hourIsFixed: single values, lists and ranges fix the hour; * and steps do not', () => {
    expect(cron('30 1 * * *').hourIsFixed).toBe(true);
    expect(cron('30 1,13 * * *').hourIsFixed).toBe(true);
    expect(cron('30 1-3 * * *').hourIsFixed).toBe(true);
    expect(cron('0 * * * *').hourIsFixed).toBe(false);
    expect(cron('0 */2 * * *').hourIsFixed).toBe(false);
    expect(cron('0 1-5/2 * * *').hourIsFixed).toBe(false);
    expect(cron('*/15 * * * *').hourIsFixed).toBe(false);
  });

  it('descriptors, case-insensitive: @hourly, @daily, @midnight', () => {
    expect(cron('@hourly')).toMatchObject({
      minutes: [0],
      hours: range(0, 23),
      hourIsFixed: false,
      source: '@hourly',
    });
    expect(cron('@daily')).toMatchObject({ minutes: [0], hours: [0], hourIsFixed: true });
    expect(cron('@MIDNIGHT')).toMatchObject({
      minutes: [0],
      hours: [0],
      daysOfMonth: range(1, 31),
      months: range(1, 12),
    });
  });

  it('@every takes a Go-style duration of h, m, s pairs, 10 s .. 366 days', () => {
    expect(parseCron('@every 90s')).toEqual({ ok: true, every: 90, cron: null });
    expect(parseCron('@every 5m')).toEqual({ ok: true, every: 300, cron: null });
    expect(parseCron('@every 1h30m')).toEqual({ ok: true, every: 5400, cron: null });
    expect(parseCron('@Every 1H2m3S')).toEqual({ ok: true, every: 3723, cron: null });
    expect(parseCron('@every 10s')).toEqual({ ok: true, every: 10, cron: null });
    expect(parseCron('@every 8784h')).toEqual({ ok: true, every: 366 * 86_400, cron: null });
  });
});

describe('parseCron: rejections (§14.2) with their messages', () => {
  it('six or seven fields (seconds, year)', () => {
    expect(error('0 0 * * * *')).toBe(
      'expected 5 fields (minute hour day-of-month month day-of-week), got 6; seconds and year fields are not supported',
    );
    expect(error('0 0 0 * * * 2026')).toMatch(/got 7; seconds and year fields are not supported$/);
    expect(error('0 0 * *')).toBe(
      'expected 5 fields (minute hour day-of-month month day-of-week), got 4',
    );
  });

  it('? L W #', () => {
    expect(error('0 0 ? * *')).toBe('day-of-month field: "?" is not supported; use *');
    expect(error('0 0 * * ?')).toBe('day-of-week field: "?" is not supported; use *');
    expect(error('0 0 L * *')).toBe(
      'day-of-month field: "L" is not supported (L and W are not part of this dialect)',
    );
    expect(error('0 0 15W * *')).toBe(
      'day-of-month field: "15W" is not supported (L and W are not part of this dialect)',
    );
    expect(error('0 0 LW * *')).toMatch(/^day-of-month field: "LW" is not supported/);
    expect(error('0 0 * * 5L')).toBe(
      'day-of-week field: "5L" is not supported (L and W are not part of this dialect)',
    );
    expect(error('0 0 * * 1#2')).toBe(
      'day-of-week field: "#" (nth weekday of the month) is not supported',
    );
  });

  it('other descriptors', () => {
    for (const d of ['@yearly', '@annually', '@monthly', '@weekly', '@reboot']) {
      expect(error(d)).toBe(
        `descriptor "${d}" is not supported; use @hourly, @daily, @midnight or @every <duration>`,
      );
    }
    expect(error('@daily 5')).toBe('@daily takes no arguments');
  });

  it('out-of-range values, per field', () => {
    expect(error('61 * * * *')).toBe('minute field: 61 is out of range 0-59');
    expect(error('0 24 * * *')).toBe('hour field: 24 is out of range 0-23');
    expect(error('0 0 0 * *')).toBe('day-of-month field: 0 is out of range 1-31');
    expect(error('0 0 32 * *')).toBe('day-of-month field: 32 is out of range 1-31');
    expect(error('0 0 * 13 *')).toBe('month field: 13 is out of range 1-12');
    expect(error('0 0 * 0 *')).toBe('month field: 0 is out of range 1-12');
    expect(error('0 0 * * 8')).toBe('day-of-week field: 8 is out of range 0-7');
    expect(error('0-60 * * * *')).toBe('minute field: 60 is out of range 0-59');
  });

  it('step 0 and oversized steps', () => {
    expect(error('*/0 * * * *')).toBe('minute field: step must be at least 1');
    expect(error('0 1-5/0 * * *')).toBe('hour field: step must be at least 1');
    expect(error('*/61 * * * *')).toBe('minute field: step 61 is out of range 1-60');
    expect(error('*/x * * * *')).toBe('minute field: step "x" is not a number');
  });

  it('reversed ranges', () => {
    expect(error('0 5-2 * * *')).toBe('hour field: range 5-2 is reversed');
    expect(error('0 0 * DEC-JAN *')).toBe('month field: range DEC-JAN is reversed');
  });

  it('more than 200 characters (code points)', () => {
    const withLength = (n: number): string => `0 0 * * *${' '.repeat(n - 9)}`;
    expect(parseCron(withLength(200)).ok).toBe(true);
    expect(error(withLength(201))).toBe('must have at most 200 characters');
    expect(error(`0 0 * * * ${'é'.repeat(191)}`)).toBe('must have at most 200 characters');
  });

  it('@every outside 10 s .. 366 days, or not a Go-style duration', () => {
    expect(error('@every 9s')).toBe(
      '@every duration "9s" must be between 10s and 366 days (8784h)',
    );
    expect(error('@every 8785h')).toBe(
      '@every duration "8785h" must be between 10s and 366 days (8784h)',
    );
    expect(error('@every 0s')).toMatch(/must be between 10s and 366 days/);
    expect(error('@every 1.5h')).toBe(
      '@every duration "1.5h" is not valid; use <integer><unit> pairs with units h, m, s, such as 90s, 5m or 1h30m',
    );
    expect(error('@every 100ms')).toMatch(/is not valid/);
    expect(error('@every 1d')).toMatch(/is not valid/);
    expect(error('@every')).toBe('@every needs exactly one duration, such as @every 5m');
    expect(error('@every 5m 5m')).toBe('@every needs exactly one duration, such as @every 5m');
  });

  it('names in the wrong field, unknown names, empty items and stray text', () => {
    expect(error('0 0 * * JAN')).toBe(
      'day-of-week field: "JAN" is not a valid value; use a number or a name such as MON',
    );
    expect(error('MON 0 * * *')).toBe('minute field: "MON" is not a valid value; use a number');
    expect(error('0 0 * FOO *')).toBe(
      'month field: "FOO" is not a valid value; use a number or a name such as FEB',
    );
    expect(error('1,,2 * * * *')).toBe('minute field: empty list item');
    expect(error('1-2-3 * * * *')).toBe('minute field: "1-2-3" is not a valid range');
    expect(error('1/2/3 * * * *')).toBe('minute field: "1/2/3" has more than one step');
    expect(error('-5 * * * *')).toBe('minute field: "-5" is not a valid range');
    expect(error('')).toBe('must not be empty');
    expect(error('   ')).toBe('must not be empty');
  });
});
