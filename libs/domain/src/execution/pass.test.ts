import { describe, expect, it } from 'vitest';
import { passOutcome } from './pass.js';

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
