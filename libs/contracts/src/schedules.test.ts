import { describe, expect, it } from 'vitest';
import {
  scheduleKindErrors,
  scheduleRunAtErrors,
  toUtcMillis,
  validateScheduleTrigger,
  validateScheduleUpsert,
} from './index.js';
import type { ScheduleUpsertRequest } from './index.js';
import { chars, definition, errorsOf, valueOf, withAt } from './validation.test-support.js';

const cron = { kind: 'Cron', cronExpression: '*/5 * * * *', definition };
const interval = { kind: 'Interval', intervalSeconds: 60, definition };
const once = { kind: 'Once', runAt: '2030-01-01T00:00:00Z', definition };

describe('ScheduleUpsertRequest', () => {
  it('accepts one body of each kind', () => {
    expect(valueOf(validateScheduleUpsert(cron))).toEqual(cron);
    expect(valueOf(validateScheduleUpsert(interval))).toEqual(interval);
    expect(valueOf(validateScheduleUpsert(once))).toEqual(once);
  });

  it('kind and definition are required', () => {
    expect(errorsOf(validateScheduleUpsert({}))).toEqual([
      { field: '/kind', message: 'is required' },
      { field: '/definition', message: 'is required' },
    ]);
  });

  it('kind is one of Cron, Interval, Once (case-sensitive)', () => {
    expect(errorsOf(validateScheduleUpsert({ ...cron, kind: 'cron' }))).toEqual([
      { field: '/kind', message: 'must be one of: Cron, Interval, Once' },
    ]);
  });

  // prettier-ignore
  it.each([
    ['catchupMax is 1..1000 (low end)', '/catchupMax', 1, 0, 'must be at least 1'],
    ['catchupMax is 1..1000 (high end)', '/catchupMax', 1000, 1001, 'must be at most 1000'],
    ['jitterSeconds is 0..3600 (low end)', '/jitterSeconds', 0, -1, 'must be at least 0'],
    ['jitterSeconds is 0..3600 (high end)', '/jitterSeconds', 3600, 3601, 'must be at most 3600'],
    ['jitterSeconds is an integer', '/jitterSeconds', 5, 5.5, 'must be an integer'],
    ['overlapPolicy is Skip, Queue, Replace or Allow', '/overlapPolicy', 'Replace', 'skip', 'must be one of: Skip, Queue, Replace, Allow'],
    ['catchupPolicy is None, One or All', '/catchupPolicy', 'All', 'Latest', 'must be one of: None, One, All'],
    ['timeZone is a string', '/timeZone', 'Europe/Paris', 1, 'must be a string'],
    ['cronExpression is at most 200 characters', '/cronExpression', chars(200, '*'), chars(201, '*'), 'must have at most 200 characters'],
  ])('%s', (_, member, atLimit, pastLimit, message) => {
    expect(validateScheduleUpsert(withAt(cron, member, atLimit)).ok).toBe(true);
    expect(errorsOf(validateScheduleUpsert(withAt(cron, member, pastLimit)))).toEqual([
      { field: member, message },
    ]);
  });

  it('intervalSeconds is 10..31536000', () => {
    const at = (n: unknown) => validateScheduleUpsert({ ...interval, intervalSeconds: n });
    expect(at(10).ok).toBe(true);
    expect(at(31_536_000).ok).toBe(true);
    expect(errorsOf(at(9))).toEqual([
      { field: '/intervalSeconds', message: 'must be at least 10' },
    ]);
    expect(errorsOf(at(31_536_001))).toEqual([
      { field: '/intervalSeconds', message: 'must be at most 31536000' },
    ]);
    expect(errorsOf(at('60'))).toEqual([
      { field: '/intervalSeconds', message: 'must be an integer or null' },
    ]);
  });

  it('runAt must be a date-time with an offset', () => {
    expect(
      valueOf(validateScheduleUpsert({ ...once, runAt: '2030-01-01T01:00:00+01:00' })).runAt,
    ).toBe('2030-01-01T01:00:00+01:00');
    expect(errorsOf(validateScheduleUpsert({ ...once, runAt: '2030-01-01T00:00:00' }))).toEqual([
      { field: '/runAt', message: 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)' },
    ]);
  });

  it('definition errors point below /definition', () => {
    const body = { ...cron, definition: { name: '', stages: [{ stageName: 's' }] } };
    expect(errorsOf(validateScheduleUpsert(body))).toEqual([
      { field: '/definition/name', message: 'must have at least 1 character' },
      { field: '/definition/stages/0/stageHandlerName', message: 'is required' },
    ]);
  });

  it('definition.apiKey is ignored and not part of the value', () => {
    const value = valueOf(
      validateScheduleUpsert({ ...cron, definition: { ...definition, apiKey: 'pos_x' } }),
    );
    expect(value.definition).toEqual(definition);
  });

  it('null settings count as omitted', () => {
    expect(
      valueOf(
        validateScheduleUpsert({
          ...cron,
          intervalSeconds: null,
          runAt: null,
          timeZone: null,
          overlapPolicy: null,
          catchupPolicy: null,
          catchupMax: null,
          jitterSeconds: null,
        }),
      ),
    ).toEqual(cron);
  });
});

describe('validation per kind (addendum §14.1)', () => {
  it('Cron requires cronExpression; intervalSeconds and runAt must be absent or null', () => {
    expect(
      errorsOf(
        validateScheduleUpsert({
          kind: 'Cron',
          intervalSeconds: 60,
          runAt: once.runAt,
          definition,
        }),
      ),
    ).toEqual([
      { field: '/cronExpression', message: 'is required when kind is Cron' },
      { field: '/intervalSeconds', message: 'must be absent or null when kind is Cron' },
      { field: '/runAt', message: 'must be absent or null when kind is Cron' },
    ]);
  });

  it('Interval requires intervalSeconds; cronExpression and runAt must be absent or null', () => {
    expect(
      errorsOf(
        validateScheduleUpsert({
          ...interval,
          intervalSeconds: undefined,
          cronExpression: '* * * * *',
        }),
      ),
    ).toEqual([
      { field: '/intervalSeconds', message: 'is required when kind is Interval' },
      { field: '/cronExpression', message: 'must be absent or null when kind is Interval' },
    ]);
  });

  it('Once requires runAt; cronExpression and intervalSeconds must be absent or null', () => {
    expect(
      errorsOf(
        validateScheduleUpsert({ kind: 'Once', runAt: null, intervalSeconds: 60, definition }),
      ),
    ).toEqual([
      { field: '/runAt', message: 'is required when kind is Once' },
      { field: '/intervalSeconds', message: 'must be absent or null when kind is Once' },
    ]);
  });

  it('kind rules are reported together with the other errors', () => {
    expect(errorsOf(validateScheduleUpsert({ kind: 'Cron', catchupMax: 0, definition }))).toEqual([
      { field: '/catchupMax', message: 'must be at least 1' },
      { field: '/cronExpression', message: 'is required when kind is Cron' },
    ]);
  });

  it('scheduleKindErrors applies the same rules to a validated body', () => {
    const body = { kind: 'Interval', definition } as ScheduleUpsertRequest;
    expect(scheduleKindErrors(body)).toEqual([
      { field: '/intervalSeconds', message: 'is required when kind is Interval' },
    ]);
    expect(scheduleKindErrors(valueOf(validateScheduleUpsert(interval)))).toEqual([]);
  });

  it('a Once runAt must be in the future, unless it equals the stored runAt', () => {
    const body = valueOf(validateScheduleUpsert({ ...once, runAt: '2025-01-01T00:00:00Z' }));
    const runAt = toUtcMillis('2025-01-01T00:00:00Z');
    expect(scheduleRunAtErrors(body, { now: runAt - 1 })).toEqual([]);
    expect(scheduleRunAtErrors(body, { now: runAt })).toEqual([
      { field: '/runAt', message: 'must be in the future' },
    ]);
    expect(scheduleRunAtErrors(body, { now: runAt + 1, storedRunAt: runAt })).toEqual([]);
    expect(scheduleRunAtErrors(body, { now: runAt + 1, storedRunAt: runAt - 1 })).toEqual([
      { field: '/runAt', message: 'must be in the future' },
    ]);
  });
});

describe('ScheduleTriggerRequest', () => {
  it('no body or an empty object is allowed', () => {
    expect(valueOf(validateScheduleTrigger(undefined))).toEqual({});
    expect(valueOf(validateScheduleTrigger({}))).toEqual({});
  });

  it('a body that is present but not a JSON object is an error at ""', () => {
    expect(errorsOf(validateScheduleTrigger(null))).toEqual([
      { field: '', message: 'must be an object' },
    ]);
    expect(errorsOf(validateScheduleTrigger('x'))).toEqual([
      { field: '', message: 'must be an object' },
    ]);
  });

  it('input is any JSON value; null counts as omitted', () => {
    expect(valueOf(validateScheduleTrigger({ input: { a: null } }))).toEqual({
      input: { a: null },
    });
    expect(valueOf(validateScheduleTrigger({ input: null }))).toEqual({});
  });

  it('the resulting input obeys the 262144-byte limit, at /input', () => {
    expect(validateScheduleTrigger({ input: chars(262_144) }).ok).toBe(true);
    expect(errorsOf(validateScheduleTrigger({ input: chars(262_145) }))).toEqual([
      { field: '/input', message: 'must be at most 262144 bytes' },
    ]);
    expect(errorsOf(validateScheduleTrigger({ input: [chars(262_143)] }))).toEqual([
      { field: '/input', message: 'must be at most 262144 bytes' },
    ]);
  });
});
