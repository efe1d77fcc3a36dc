import { describe, expect, it } from 'vitest';
import { validateScheduleBackfill } from './index.js';
import { chars, errorsOf, valueOf } from './validation.test-support.js';

describe('ScheduleBackfillRequest', () => {
  const range = { from: '2030-01-01T00:00:00Z', to: '2030-01-02T00:00:00+01:00' };

  it('from and to are required date-times; overlapPolicy and input are optional', () => {
    expect(valueOf(validateScheduleBackfill(range))).toEqual(range);
    expect(
      valueOf(validateScheduleBackfill({ ...range, overlapPolicy: 'Allow', input: { a: 1 } })),
    ).toEqual({ ...range, overlapPolicy: 'Allow', input: { a: 1 } });
    expect(errorsOf(validateScheduleBackfill({}))).toEqual([
      { field: '/from', message: 'is required' },
      { field: '/to', message: 'is required' },
    ]);
    expect(errorsOf(validateScheduleBackfill(null))).toEqual([
      { field: '', message: 'must be an object' },
    ]);
  });

  it('every invalid field is reported at once', () => {
    const errors = errorsOf(
      validateScheduleBackfill({
        from: '2030-01-01T00:00:00',
        to: 12,
        overlapPolicy: 'skip',
        input: chars(262_145),
      }),
    );
    expect(errors.map((e) => e.field)).toEqual(['/from', '/to', '/overlapPolicy', '/input']);
    expect(errors[2]?.message).toBe('must be one of: Skip, Queue, Replace, Allow');
  });

  it('to must not be before from (compared as instants); equal is an empty range', () => {
    expect(
      validateScheduleBackfill({ from: '2030-01-01T01:00:00+01:00', to: '2030-01-01T00:00:00Z' })
        .ok,
    ).toBe(true);
    expect(
      errorsOf(
        validateScheduleBackfill({ from: '2030-01-01T00:00:00.001Z', to: '2030-01-01T00:00:00Z' }),
      ),
    ).toEqual([{ field: '/to', message: 'must not be before from' }]);
  });

  it('null counts as omitted', () => {
    expect(
      valueOf(validateScheduleBackfill({ ...range, overlapPolicy: null, input: null })),
    ).toEqual(range);
  });
});
