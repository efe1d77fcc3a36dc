import { describe, expect, it } from 'vitest';
import { niceMax, ticks } from './chart';

describe('niceMax', () => {
  it('rounds up to 1, 2 or 5 times a power of ten', () => {
    expect(niceMax(0)).toBe(1);
    expect(niceMax(3)).toBe(5);
    expect(niceMax(7)).toBe(10);
    expect(niceMax(12)).toBe(20);
    expect(niceMax(20)).toBe(20);
    expect(niceMax(430)).toBe(500);
    expect(niceMax(501)).toBe(1000);
  });
});

describe('ticks', () => {
  it('spaces integer ticks from zero to the top, always labelling the top', () => {
    expect(ticks(20)).toEqual([0, 5, 10, 15, 20]);
    expect(ticks(10)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(ticks(1)).toEqual([0, 1]);
    expect(ticks(2)).toEqual([0, 1, 2]);
    expect(ticks(5)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(ticks(500)).toEqual([0, 100, 200, 300, 400, 500]);
  });

  it('labels the top of every axis niceMax can produce', () => {
    for (const max of [0, 1, 3, 7, 12, 20, 43, 99, 430, 501, 7_000]) {
      const top = niceMax(max);
      const t = ticks(top);
      expect(t[0]).toBe(0);
      expect(t[t.length - 1]).toBe(top);
      expect(t.length).toBeLessThanOrEqual(6);
    }
  });
});
