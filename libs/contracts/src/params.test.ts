import { describe, expect, it } from 'vitest';
import {
  parseCursor,
  parseId,
  parseLimit,
  parseScheduleName,
  parseScheduleStatus,
} from './index.js';

describe('path parameter {pipelineId} / {stageId} (addendum §1)', () => {
  it.each([
    ['1', 1],
    ['42', 42],
    ['9007199254740991', 9_007_199_254_740_991],
  ])('%s is the id %d', (raw, id) => {
    expect(parseId(raw, 'pipelineId')).toEqual({ ok: true, value: id });
  });

  it.each([
    '0',
    '01',
    '-1',
    '1.5',
    '1e3',
    '+1',
    ' 1',
    '',
    'abc',
    '0x10',
    '9007199254740992',
    '99999999999999999999',
  ])('%j is a 400 whose field is the parameter name', (raw) => {
    const result = parseId(raw, 'stageId');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors).toHaveLength(1);
      expect(result.errors[0]?.field).toBe('stageId');
    }
  });

  it('names the limit when the id is too large', () => {
    expect(parseId('9007199254740992', 'pipelineId')).toEqual({
      ok: false,
      errors: [{ field: 'pipelineId', message: 'must be at most 9007199254740991' }],
    });
  });
});

describe('path parameter {name} of a schedule', () => {
  it('is 1..200 characters (code points)', () => {
    expect(parseScheduleName('nightly')).toEqual({ ok: true, value: 'nightly' });
    expect(parseScheduleName('😀'.repeat(200))).toEqual({ ok: true, value: '😀'.repeat(200) });
    expect(parseScheduleName('😀'.repeat(201))).toEqual({
      ok: false,
      errors: [{ field: 'name', message: 'must have at most 200 characters' }],
    });
    expect(parseScheduleName('')).toEqual({
      ok: false,
      errors: [{ field: 'name', message: 'must have at least 1 character' }],
    });
  });

  it.each(['a\u0000b', 'tab\there', 'line\n', 'del\u007f', 'c1\u0085'])(
    'rejects control characters (%j)',
    (raw) => {
      expect(parseScheduleName(raw)).toEqual({
        ok: false,
        errors: [{ field: 'name', message: 'must not contain control characters' }],
      });
    },
  );

  it('keeps spaces, slashes and non-ASCII as given', () => {
    expect(parseScheduleName('Daily / Ünïcode ✓')).toEqual({
      ok: true,
      value: 'Daily / Ünïcode ✓',
    });
  });
});

describe('query parameters limit, status, cursor (addendum §14.8)', () => {
  it('limit defaults to 50 and is an integer 1..200', () => {
    expect(parseLimit(undefined)).toEqual({ ok: true, value: 50 });
    expect(parseLimit('1')).toEqual({ ok: true, value: 1 });
    expect(parseLimit('200')).toEqual({ ok: true, value: 200 });
    expect(parseLimit(['7'])).toEqual({ ok: true, value: 7 });
  });

  it.each(['0', '201', '', 'abc', '1.5', '-1', '050', '1e2'])(
    'limit %j is an error at limit',
    (raw) => {
      expect(parseLimit(raw)).toEqual({
        ok: false,
        errors: [{ field: 'limit', message: 'must be an integer from 1 to 200' }],
      });
    },
  );

  it('a repeated limit is an error', () => {
    expect(parseLimit(['1', '2'])).toEqual({
      ok: false,
      errors: [{ field: 'limit', message: 'must be given at most once' }],
    });
  });

  it('status is Active, Paused or Archived (case-sensitive), absent means all', () => {
    expect(parseScheduleStatus(undefined)).toEqual({ ok: true, value: undefined });
    expect(parseScheduleStatus('Paused')).toEqual({ ok: true, value: 'Paused' });
    expect(parseScheduleStatus('paused')).toEqual({
      ok: false,
      errors: [{ field: 'status', message: 'must be one of: Active, Paused, Archived' }],
    });
  });

  it('cursor is an opaque non-empty string', () => {
    expect(parseCursor(undefined)).toEqual({ ok: true, value: undefined });
    expect(parseCursor('abc')).toEqual({ ok: true, value: 'abc' });
    expect(parseCursor('')).toEqual({
      ok: false,
      errors: [{ field: 'cursor', message: 'must not be empty' }],
    });
  });
});
