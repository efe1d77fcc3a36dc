import { describe, expect, it } from 'vitest';
import { isKnownTimeZone, validatePlan } from './plan.js';

const NOW = new Date('2026-01-10T12:00:00.000Z');
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
