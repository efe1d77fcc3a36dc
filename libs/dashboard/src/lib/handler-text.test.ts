import { describe, expect, it } from 'vitest';
import { limitField, limitsRequest, limitsText } from './handler-text';

describe('handler text', () => {
  it('says the limits in words, or none', () => {
    expect(limitsText({ maxConcurrent: 5, maxPerSecond: 2.5 })).toBe('5 at once · 2.5/s');
    expect(limitsText({ maxConcurrent: null, maxPerSecond: 0.5 })).toBe('0.5/s');
    expect(limitsText({ maxConcurrent: null, maxPerSecond: null })).toBe('none');
  });

  it('fills the form with the stored limits, empty for none', () => {
    expect([limitField(3), limitField(null), limitField(0.25)]).toEqual(['3', '', '0.25']);
  });

  it('reads the form back: an empty field clears its limit, numbers are numbers', () => {
    expect(limitsRequest(' 4 ', '')).toEqual({ maxConcurrent: 4, maxPerSecond: null });
    expect(limitsRequest('', '0.5')).toEqual({ maxConcurrent: null, maxPerSecond: 0.5 });
    // Not a number: sent as typed, so the API's 400 names the field.
    expect(limitsRequest('many', '')).toEqual({ maxConcurrent: 'many', maxPerSecond: null });
  });
});
