import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jitteredFireAt, jitterOffsetMs } from './jitter.js';

describe('jitterOffsetMs (§14.4)', () => {
  it('matches the formula computed independently', () => {
    const tick = new Date('2026-03-01T12:00:00.000Z');
    const digest = createHash('sha256').update('42:2026-03-01T12:00:00.000Z').digest('hex');
    const expected = BigInt(`0x${digest.slice(0, 16)}`) % 300_001n;
    expect(jitterOffsetMs(42, tick, 300)).toBe(Number(expected));
    expect(jitteredFireAt(42, tick, 300).getTime()).toBe(tick.getTime() + Number(expected));
  });

  it('is 0 without jitter, and deterministic', () => {
    expect(jitterOffsetMs(7, new Date('2026-01-01T00:00:00Z'), 0)).toBe(0);
    const t = new Date('2026-01-01T00:00:00Z');
    expect(jitterOffsetMs(7, t, 3600)).toBe(jitterOffsetMs(7, new Date(t.getTime()), 3600));
  });

  it('stays within 0..jitterSeconds·1000 and is an integer', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }),
        fc.integer({ min: 0, max: 3600 }),
        (id, ms, jitter) => {
          const offset = jitterOffsetMs(id, new Date(ms), jitter);
          expect(Number.isInteger(offset)).toBe(true);
          expect(offset).toBeGreaterThanOrEqual(0);
          expect(offset).toBeLessThanOrEqual(jitter * 1000);
        },
      ),
    );
  });

  it('spreads ticks over the window', () => {
    const offsets = Array.from({ length: 200 }, (_, i) =>
      jitterOffsetMs(1, new Date(Date.UTC(2026, 0, 1) + i * 60_000), 60),
    );
    expect(Math.min(...offsets)).toBeLessThan(10_000);
    expect(Math.max(...offsets)).toBeGreaterThan(50_000);
  });

  it('never jitters a fire time past 9999-12-31T23:59:59.999Z, the last instant PostgreSQL reads back', () => {
    const last = new Date('9999-12-31T23:59:59.999Z');
    const ticks = Array.from({ length: 20 }, (_, i) => new Date(last.getTime() - i * 1000));
    for (const tick of ticks) {
      const at = jitteredFireAt(7, tick, 3600);
      expect(at.getTime()).toBeGreaterThanOrEqual(tick.getTime());
      expect(at.getTime()).toBeLessThanOrEqual(last.getTime());
    }
    expect(ticks.some((t) => jitterOffsetMs(7, t, 3600) > last.getTime() - t.getTime())).toBe(true);
  });
});
