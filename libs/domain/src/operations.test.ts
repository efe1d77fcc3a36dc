import { describe, expect, it } from 'vitest';
import { operationBudget } from './operations.js';

describe('operationBudget (decision 0133)', () => {
  it('gives maxPerSecond × elapsed, whole items now and the fraction carried to the next tick', () => {
    expect(operationBudget(500, 100, 0)).toEqual({ take: 50, carry: 0 });
    const first = operationBudget(5, 100, 0);
    expect(first.take).toBe(0);
    expect(first.carry).toBeCloseTo(0.5);
    const second = operationBudget(5, 100, first.carry);
    expect(second.take).toBe(1);
    expect(second.carry).toBeCloseTo(0);
  });

  it('over many ticks applies the rate exactly', () => {
    let carry = 0;
    let taken = 0;
    for (let i = 0; i < 100; i += 1) {
      const b = operationBudget(7, 100, carry);
      taken += b.take;
      carry = b.carry;
    }
    expect(taken).toBe(70);
  });

  it('never more than one second of items, however long the runner was away', () => {
    expect(operationBudget(50, 60_000, 0.9)).toEqual({ take: 50, carry: 0 });
    expect(operationBudget(50, -5, 0)).toEqual({ take: 0, carry: 0 });
  });
});
