import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from './retry.js';
import { applyFailure, nextRetryAtOf } from './failure.js';
import { STAGE_STATUSES } from '../statuses.js';

const NOW = new Date('2025-03-01T12:00:00.123Z');
const policy = (p: Partial<RetryPolicy> = {}): RetryPolicy => ({
  retryInterval: 10,
  maxRetries: 2,
  backoff: 'exponential',
  maxRetryInterval: null,
  jitter: false,
  retryOnErrorCodes: [],
  ...p,
});
const noRandom = () => {
  throw new Error('random must not be called');
};

describe('applying a failure (addendum §7, §10)', () => {
  it('an eligible failure → RetryScheduled with retryAttempt k = n + 1, retryable, nextRetryAt = lastFailedAt + delay', () => {
    const out = applyFailure(policy(), { retryAttempt: 1, failureCount: 4 }, { errorCode: 'BOOM', retryable: null }, NOW, noRandom);
    expect(out).toEqual({
      status: 'RetryScheduled',
      retryAttempt: 2,
      failureCount: 5,
      lastErrorCode: 'BOOM',
      lastFailedAt: NOW,
      failureDisposition: 'retryable',
      nextRetryAt: new Date('2025-03-01T12:00:20.123Z'),
      finishedAt: null,
    });
  });

  it('nextRetryAt keeps millisecond precision with jitter (lastFailedAt and nextRetryAt from one clock reading)', () => {
    const out = applyFailure(policy({ jitter: true }), { retryAttempt: 0, failureCount: 0 }, { errorCode: null, retryable: null }, NOW, () => 0.123_4);
    // delay 10 s jittered: 5000 + 0.1234 × 5000 = 5617 ms
    expect(out.nextRetryAt?.getTime()).toBe(NOW.getTime() + 5_617);
    expect(out.lastFailedAt.getTime()).toBe(NOW.getTime());
    expect(out.lastErrorCode).toBeNull();
  });

  it('a failure that is not eligible → Failed, terminal, finishedAt now, retryAttempt unchanged, no nextRetryAt', () => {
    const out = applyFailure(policy(), { retryAttempt: 2, failureCount: 2 }, { errorCode: 'BOOM', retryable: null }, NOW, noRandom);
    expect(out).toEqual({
      status: 'Failed',
      retryAttempt: 2,
      failureCount: 3,
      lastErrorCode: 'BOOM',
      lastFailedAt: NOW,
      failureDisposition: 'terminal',
      nextRetryAt: null,
      finishedAt: NOW,
    });
  });

  it('a terminal error code fails at once even with retries left', () => {
    const out = applyFailure(policy(), { retryAttempt: 0, failureCount: 0 }, { errorCode: 'VALIDATION_ERROR', retryable: true }, NOW, noRandom);
    expect(out.status).toBe('Failed');
    expect(out.failureDisposition).toBe('terminal');
  });

  it('retryable=false fails at once', () => {
    expect(applyFailure(policy(), { retryAttempt: 0, failureCount: 0 }, { errorCode: 'X', retryable: false }, NOW, noRandom).status).toBe('Failed');
  });

  it('LEASE_EXPIRED and TIMEOUT are retried like any failure, still filtered by retryOnErrorCodes', () => {
    const p = policy({ retryOnErrorCodes: ['LEASE_EXPIRED'] });
    expect(applyFailure(p, { retryAttempt: 0, failureCount: 0 }, { errorCode: 'LEASE_EXPIRED', retryable: true }, NOW, noRandom).status).toBe('RetryScheduled');
    expect(applyFailure(p, { retryAttempt: 0, failureCount: 0 }, { errorCode: 'TIMEOUT', retryable: true }, NOW, noRandom).status).toBe('Failed');
  });

  it('does not share the Date instance passed as now', () => {
    const out = applyFailure(policy({ maxRetries: 0 }), { retryAttempt: 0, failureCount: 0 }, { errorCode: null, retryable: null }, NOW, noRandom);
    expect(out.lastFailedAt).not.toBe(NOW);
    expect(out.finishedAt).not.toBe(NOW);
  });

  it('a huge exponential delay without a cap still yields a valid nextRetryAt', () => {
    const out = applyFailure(policy({ maxRetries: 5000 }), { retryAttempt: 2000, failureCount: 0 }, { errorCode: null, retryable: null }, NOW, noRandom);
    expect(out.status).toBe('RetryScheduled');
    expect(Number.isNaN(out.nextRetryAt?.getTime())).toBe(false);
    const jittered = applyFailure(policy({ maxRetries: 5000, jitter: true }), { retryAttempt: 2000, failureCount: 0 }, { errorCode: null, retryable: null }, NOW, () => 0);
    expect(Number.isNaN(jittered.nextRetryAt?.getTime())).toBe(false);
  });
});

describe('nextRetryAt (addendum §4: null until it applies; §7: leaving RetryScheduled clears it)', () => {
  const at = new Date('2030-01-01T00:00:30.000Z');

  it('is the scheduled time while the stage is RetryScheduled', () => {
    expect(nextRetryAtOf('RetryScheduled', at)).toEqual(at);
  });

  it('is null in every other status, whatever was stored: a cancelled or throttled retry is no retry', () => {
    for (const status of STAGE_STATUSES.filter((s) => s !== 'RetryScheduled')) {
      expect(nextRetryAtOf(status, at), status).toBeNull();
    }
  });
});
