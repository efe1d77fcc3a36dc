import { describe, expect, it } from 'vitest';
import { allocateSlots, passOutcome } from './pass.js';

const now = new Date('2026-01-01T00:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

describe('passOutcome (addendum §8, §9)', () => {
  it('derives Running while a stage is Pending and needs no further pass', () => {
    expect(passOutcome('NotStarted', [{ status: 'Pending', nextRetryAt: null }, { status: 'NotStarted', nextRetryAt: null }], now)).toEqual({
      status: 'Running',
      finished: false,
      nextPassAt: null,
    });
  });

  it('finishes the pipeline when every stage is terminal, Failed over Completed', () => {
    expect(passOutcome('Running', [{ status: 'Completed', nextRetryAt: null }, { status: 'Failed', nextRetryAt: null }], now)).toEqual({
      status: 'Failed',
      finished: true,
      nextPassAt: null,
    });
    expect(passOutcome('Running', [{ status: 'Completed', nextRetryAt: null }, { status: 'Skipped', nextRetryAt: null }], now).status).toBe('Completed');
  });

  it('a pipeline already terminal stays as it is and is not finished again', () => {
    expect(passOutcome('Cancelled', [{ status: 'Cancelled', nextRetryAt: null }], now)).toEqual({ status: 'Cancelled', finished: false, nextPassAt: null });
  });

  it('asks for the next pass at the earliest scheduled retry (Pending while only retries wait, §19.1)', () => {
    const out = passOutcome(
      'Running',
      [
        { status: 'RetryScheduled', nextRetryAt: later(5000) },
        { status: 'RetryScheduled', nextRetryAt: later(2000) },
        { status: 'Completed', nextRetryAt: null },
      ],
      now,
    );
    expect(out).toEqual({ status: 'Pending', finished: false, nextPassAt: later(2000) });
  });
});

describe('allocateSlots (addendum §7, APP_MAX_ACTIVE_STAGES)', () => {
  const candidates = [
    { id: 30, status: 'NotStarted' as const },
    { id: 10, status: 'Throttled' as const },
    { id: 20, status: 'RetryScheduled' as const },
    { id: 40, status: 'Throttled' as const },
  ];

  it('without a cap every candidate is dispatched', () => {
    expect(allocateSlots(candidates, null)).toEqual({ dispatch: [10, 40, 20, 30], throttle: [] });
  });

  it('gives the free slots to the stages already Throttled first, oldest first, then to newly ready ones; throttles the rest', () => {
    expect(allocateSlots(candidates, 1)).toEqual({ dispatch: [10], throttle: [20, 30] });
    expect(allocateSlots(candidates, 2)).toEqual({ dispatch: [10, 40], throttle: [20, 30] });
    expect(allocateSlots(candidates, 3)).toEqual({ dispatch: [10, 40, 20], throttle: [30] });
  });

  it('no free slot (or a negative count) dispatches nothing', () => {
    expect(allocateSlots(candidates, 0)).toEqual({ dispatch: [], throttle: [20, 30] });
    expect(allocateSlots(candidates, -3).dispatch).toEqual([]);
  });
});
