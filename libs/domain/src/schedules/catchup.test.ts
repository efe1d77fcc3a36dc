import { describe, expect, it } from 'vitest';
import { isMissed, selectCatchup } from './catchup.js';

const t = (minute: number): Date => new Date(Date.UTC(2026, 0, 1, 0, minute));
const missed = [t(1), t(2), t(3), t(4), t(5)];

describe('selectCatchup (§14.6)', () => {
  it('None creates nothing', () => {
    expect(selectCatchup(missed, 'None', 10)).toEqual([]);
  });
  it('One takes the latest missed tick', () => {
    expect(selectCatchup(missed, 'One', 10)).toEqual([t(5)]);
    expect(selectCatchup([t(9)], 'One', 1)).toEqual([t(9)]);
  });
  it('All takes the latest catchupMax, oldest first', () => {
    expect(selectCatchup(missed, 'All', 3)).toEqual([t(3), t(4), t(5)]);
    expect(selectCatchup(missed, 'All', 10)).toEqual(missed);
    expect(selectCatchup(missed, 'All', 1)).toEqual([t(5)]);
  });
  it('nothing missed, nothing to run; the input is not modified', () => {
    for (const policy of ['None', 'One', 'All'] as const)
      expect(selectCatchup([], policy, 10)).toEqual([]);
    const unordered = [t(3), t(1), t(2)];
    expect(selectCatchup(unordered, 'All', 2)).toEqual([t(2), t(3)]);
    expect(unordered).toEqual([t(3), t(1), t(2)]);
  });
});

describe('isMissed', () => {
  const fire = new Date('2026-01-01T00:00:00.000Z');
  it('a tick handled within the grace is not missed; later it is', () => {
    expect(isMissed(fire, new Date('2026-01-01T00:00:00.000Z'), 60)).toBe(false);
    expect(isMissed(fire, new Date('2026-01-01T00:01:00.000Z'), 60)).toBe(false);
    expect(isMissed(fire, new Date('2026-01-01T00:01:00.001Z'), 60)).toBe(true);
    expect(isMissed(fire, new Date('2025-12-31T23:59:00.000Z'), 60)).toBe(false);
  });
});
