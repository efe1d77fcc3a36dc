import { describe, expect, it } from 'vitest';
import { parseHandlerName, validateHandlerSettings } from './index.js';
import { chars, errorsOf, valueOf } from './validation.test-support.js';

describe('HandlerSettingsRequest', () => {
  it('accepts an empty body, every member, nulls that clear limits and unknown members', () => {
    expect(valueOf(validateHandlerSettings({}))).toEqual({});
    const full = { paused: true, maxConcurrent: 5, maxPerSecond: 2.5 };
    expect(valueOf(validateHandlerSettings(full))).toEqual(full);
    expect(valueOf(validateHandlerSettings({ paused: false, note: 'ignored' }))).toEqual({
      paused: false,
    });
  });

  it('keeps a null limit (it clears the limit) apart from an absent one (it keeps it); a null paused is absent', () => {
    expect(valueOf(validateHandlerSettings({ maxConcurrent: null, maxPerSecond: null }))).toEqual({
      maxConcurrent: null,
      maxPerSecond: null,
    });
    expect(valueOf(validateHandlerSettings({ maxPerSecond: null }))).toEqual({
      maxPerSecond: null,
    });
    expect(valueOf(validateHandlerSettings({ paused: null }))).toEqual({});
  });

  it('maxConcurrent is an integer 1..1000000 or null', () => {
    expect(validateHandlerSettings({ maxConcurrent: 1 }).ok).toBe(true);
    expect(validateHandlerSettings({ maxConcurrent: 1_000_000 }).ok).toBe(true);
    expect(errorsOf(validateHandlerSettings({ maxConcurrent: 0 }))).toEqual([
      { field: '/maxConcurrent', message: 'must be at least 1' },
    ]);
    expect(errorsOf(validateHandlerSettings({ maxConcurrent: 1_000_001 }))).toEqual([
      { field: '/maxConcurrent', message: 'must be at most 1000000' },
    ]);
    expect(errorsOf(validateHandlerSettings({ maxConcurrent: 1.5 }))[0]?.field).toBe(
      '/maxConcurrent',
    );
  });

  it('maxPerSecond is a number above 0, at most 100000, or null', () => {
    expect(validateHandlerSettings({ maxPerSecond: 0.01 }).ok).toBe(true);
    expect(validateHandlerSettings({ maxPerSecond: 100_000 }).ok).toBe(true);
    expect(errorsOf(validateHandlerSettings({ maxPerSecond: 0 }))[0]?.field).toBe('/maxPerSecond');
    expect(errorsOf(validateHandlerSettings({ maxPerSecond: 100_001 }))[0]?.field).toBe(
      '/maxPerSecond',
    );
    expect(errorsOf(validateHandlerSettings({ maxPerSecond: '5' }))[0]?.field).toBe(
      '/maxPerSecond',
    );
  });

  it('paused is a boolean, and every bad member is reported', () => {
    const errors = errorsOf(
      validateHandlerSettings({ paused: 'yes', maxConcurrent: -1, maxPerSecond: -1 }),
    );
    expect(errors.map((e) => e.field).sort()).toEqual([
      '/maxConcurrent',
      '/maxPerSecond',
      '/paused',
    ]);
  });

  it('the body is an object', () => {
    expect(errorsOf(validateHandlerSettings([]))[0]?.field).toBe('');
  });
});

describe('handler {name}', () => {
  it('is 1..300 characters, any character', () => {
    expect(valueOf(parseHandlerName('pay:{x}/é'))).toBe('pay:{x}/é');
    expect(valueOf(parseHandlerName(chars(300)))).toBe(chars(300));
    expect(errorsOf(parseHandlerName(chars(301)))).toEqual([
      { field: 'name', message: 'must have at most 300 characters' },
    ]);
    expect(errorsOf(parseHandlerName(''))).toEqual([
      { field: 'name', message: 'must have at least 1 character' },
    ]);
  });
});
