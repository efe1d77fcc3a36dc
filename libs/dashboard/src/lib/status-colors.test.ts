import { describe, expect, it } from 'vitest';
import { contrast, toneOf, TONES } from './status-colors';

describe('status badge colours', () => {
  it('computes WCAG contrast ratios', () => {
    expect(contrast('#000000', '#ffffff')).toBeCloseTo(21, 5);
    expect(contrast('#777777', '#ffffff')).toBeCloseTo(4.48, 2);
  });

  it('gives every tone at least 4.5:1 (WCAG AA for small text), also on a white page', () => {
    for (const [name, tone] of Object.entries(TONES)) {
      expect(contrast(tone.fg, tone.bg), name).toBeGreaterThanOrEqual(4.5);
      expect(contrast(tone.fg, '#ffffff'), name).toBeGreaterThanOrEqual(4.5);
    }
  });

  it('colours failures apart from successes, and unknown statuses as neutral', () => {
    expect(toneOf('Failed')).not.toEqual(toneOf('Completed'));
    expect(toneOf('SomethingNew')).toEqual(TONES.neutral);
  });
});
