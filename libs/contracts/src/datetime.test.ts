import { describe, expect, it } from 'vitest';
import {
  formatDateTime,
  formatNullableDateTime,
  isRfc3339DateTime,
  normaliseDateTime,
  toUtcMillis,
} from './index.js';

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
