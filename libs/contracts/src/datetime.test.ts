import { describe, expect, it } from 'vitest';
import {
  eventsRequestValidator,
  formatDateTime,
  formatNullableDateTime,
  isRfc3339DateTime,
  normaliseDateTime,
  registeredSchemas,
  toUtcMillis,
  validateLogRequest,
  validateResultSubmit,
  validateScheduleBackfill,
  validateScheduleUpsert,
  type FieldError,
  type Validation,
} from './index.js';
import { definition, errorsOf } from './validation.test-support.js';

describe('date-times (addendum §1 Times)', () => {
  it('requests accept RFC 3339 with Z or ±hh:mm and normalise to UTC milliseconds', () => {
    const noon = Date.UTC(2025, 2, 1, 12, 0, 0, 0);
    expect(toUtcMillis('2025-03-01T12:00:00Z')).toBe(noon);
    expect(toUtcMillis('2025-03-01T13:00:00+01:00')).toBe(noon);
    expect(toUtcMillis('2025-03-01T06:30:00-05:30')).toBe(noon);
    expect(toUtcMillis('2025-03-01t12:00:00z')).toBe(noon);
    expect(toUtcMillis('2025-03-01T12:00:00.123Z')).toBe(noon + 123);
    expect(toUtcMillis('2025-03-01T12:00:00.1Z')).toBe(noon + 100);
    expect(toUtcMillis('2025-03-01T12:00:00.123999Z')).toBe(noon + 123);
  });

  it.each([
    '2025-03-01T12:00:00',
    '2025-03-01T12:00:00.000',
    '2025-03-01 12:00:00Z',
    '2025-03-01',
    '2025-03-01T12:00Z',
    '2025-03-01T12:00:00+0100',
    '2025-03-01T12:00:00+01',
    '2025-02-29T12:00:00Z',
    '2025-13-01T12:00:00Z',
    '2025-04-31T12:00:00Z',
    '2025-03-01T24:00:00Z',
    '2025-03-01T12:60:00Z',
    '2025-03-01T12:00:60Z',
    '2025-03-01T12:00:00+24:00',
    'yesterday',
  ])('rejects %j', (s) => {
    expect(isRfc3339DateTime(s)).toBe(false);
    expect(() => toUtcMillis(s)).toThrow(RangeError);
  });

  it('accepts 29 February of a leap year', () => {
    expect(isRfc3339DateTime('2024-02-29T00:00:00Z')).toBe(true);
  });

  it('responses write UTC with exactly three fractional digits and Z', () => {
    expect(formatDateTime(new Date(Date.UTC(2025, 2, 1, 12)))).toBe('2025-03-01T12:00:00.000Z');
    expect(formatNullableDateTime(null)).toBeNull();
    expect(formatNullableDateTime(new Date(5))).toBe('1970-01-01T00:00:00.005Z');
    expect(normaliseDateTime('2025-03-01T13:00:00.5+01:00')).toBe('2025-03-01T12:00:00.500Z');
  });
});

describe('date-time bounds: years 1 to 9999 in UTC, on every request date-time field', () => {
  it('accepts the first and the last millisecond, and offsets that stay inside', () => {
    for (const s of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '0001-01-01T00:30:00+00:30', '9999-12-31T23:00:00-00:59']) {
      expect(isRfc3339DateTime(s), s).toBe(true);
    }
    expect(toUtcMillis('0001-01-01T00:00:00Z')).toBe(Date.parse('0001-01-01T00:00:00.000Z'));
  });

  it.each(['0000-01-01T00:00:00Z', '0000-12-31T23:59:59.999Z', '0001-01-01T00:00:00+00:01', '9999-12-31T23:59:59.999-00:01', '9999-12-31T23:30:00-01:00'])(
    'refuses %j, which lies outside',
    (s) => {
      expect(isRfc3339DateTime(s)).toBe(false);
      expect(() => toUtcMillis(s)).toThrow(RangeError);
    },
  );

  const range = 'must be from 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z';
  const cases: [string, (at: string) => Validation<unknown>, string][] = [
    ['POST /logs created', (at) => validateLogRequest({ message: 'm', created: at }), '/created'],
    ['worker event at', (at) => eventsRequestValidator(100)({ workerId: 'w', events: [{ kind: 'custom' }, { kind: 'custom', at }] }), '/events/1/at'],
    ['result log created', (at) => validateResultSubmit({ stageId: 1, executionId: 'e', attempt: 1, isSuccess: true, logs: [{ message: 'm', created: at }] }), '/logs/0/created'],
    ['schedule runAt', (at) => validateScheduleUpsert({ kind: 'Once', runAt: at, definition }), '/runAt'],
    ['backfill from', (at) => validateScheduleBackfill({ from: at, to: '2030-01-01T00:00:00Z' }), '/from'],
    ['backfill to', (at) => validateScheduleBackfill({ from: '0001-01-01T00:00:00Z', to: at }), '/to'],
  ];

  it.each(cases)('%s: year 0 is a 400 at the field, saying the bounds', (_what, validate, field) => {
    expect(errorsOf(validate('0000-01-01T00:00:00Z'))).toEqual<FieldError[]>([{ field, message: range }]);
    expect(validate('0001-01-01T00:00:00Z').ok).toBe(true);
  });

  it('the cases above are every request date-time field of the contract', () => {
    const requestFields: string[] = [];
    const visit = (schema: unknown, path: string): void => {
      if (typeof schema !== 'object' || schema === null) return;
      const record = schema as Record<string, unknown>;
      // A response date-time carries the UTC pattern; a request one is the bare format.
      if (record.format === 'date-time' && record.pattern === undefined) requestFields.push(path);
      for (const [key, child] of Object.entries(record)) visit(child, `${path}/${key}`);
    };
    for (const schema of registeredSchemas()) visit(schema, String(schema.title));
    expect(requestFields.sort()).toEqual([
      'LogRequest/properties/created',
      'ScheduleBackfillRequest/properties/from',
      'ScheduleBackfillRequest/properties/to',
      'ScheduleUpsertRequest/properties/runAt',
      'StageResultLog/properties/created',
      'WorkerEvent/properties/at',
    ]);
  });
});
