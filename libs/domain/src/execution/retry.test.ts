import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TERMINAL_ERROR_CODES } from '../statuses.js';
import type { RetryPolicy } from './retry.js';
import { isRetryEligible, retryDelayMs, retryDelaySeconds } from './retry.js';

const policy = (p: Partial<RetryPolicy> = {}): RetryPolicy => ({
  retryInterval: 10,
  maxRetries: 3,
  backoff: 'fixed',
  maxRetryInterval: null,
  jitter: false,
  retryOnErrorCodes: [],
  ...p,
});
const fail = (errorCode: string | null = 'BOOM', retryable: boolean | null = null) => ({ errorCode, retryable });

describe('retry eligibility (addendum §10)', () => {
  it('a failure on a stage with retries configured and left is eligible', () => {
    expect(isRetryEligible(policy(), 0, fail())).toBe(true);
  });

  it('condition 1: retryInterval > 0 and maxRetries > 0', () => {
    expect(isRetryEligible(policy({ retryInterval: 0 }), 0, fail())).toBe(false);
    expect(isRetryEligible(policy({ maxRetries: 0 }), 0, fail())).toBe(false);
  });

  it('condition 2: retryAttempt n < maxRetries', () => {
    expect(isRetryEligible(policy({ maxRetries: 3 }), 2, fail())).toBe(true);
    expect(isRetryEligible(policy({ maxRetries: 3 }), 3, fail())).toBe(false);
    expect(isRetryEligible(policy({ maxRetries: 3 }), 4, fail())).toBe(false);
  });

  it('condition 3: retryOnErrorCodes empty, or it contains the code; a null code never matches', () => {
    const only = policy({ retryOnErrorCodes: ['TIMEOUT', 'HTTP_503'] });
    expect(isRetryEligible(only, 0, fail('HTTP_503'))).toBe(true);
    expect(isRetryEligible(only, 0, fail('HTTP_500'))).toBe(false);
    expect(isRetryEligible(only, 0, fail('http_503'))).toBe(false);
    expect(isRetryEligible(only, 0, fail(null))).toBe(false);
    expect(isRetryEligible(only, 0, fail(null, true))).toBe(false);
    expect(isRetryEligible(policy(), 0, fail(null))).toBe(true);
  });

  it('condition 3 filters LEASE_EXPIRED and TIMEOUT too', () => {
    const only = policy({ retryOnErrorCodes: ['TIMEOUT'] });
    expect(isRetryEligible(only, 0, fail('TIMEOUT', true))).toBe(true);
    expect(isRetryEligible(only, 0, fail('LEASE_EXPIRED', true))).toBe(false);
  });

  it.each(TERMINAL_ERROR_CODES)('condition 4: terminal error code %s is never retried, even when listed or retryable=true', (code) => {
    expect(isRetryEligible(policy(), 0, fail(code))).toBe(false);
    expect(isRetryEligible(policy({ retryOnErrorCodes: [code] }), 0, fail(code, true))).toBe(false);
  });

  it('condition 5: retryable=false disables the retry; true or null changes nothing', () => {
    expect(isRetryEligible(policy(), 0, fail('BOOM', false))).toBe(false);
    expect(isRetryEligible(policy(), 0, fail('BOOM', true))).toBe(true);
    expect(isRetryEligible(policy(), 0, fail('BOOM', null))).toBe(true);
    expect(isRetryEligible(policy({ maxRetries: 0 }), 0, fail('BOOM', true))).toBe(false);
  });

  it('REJECTED is never retried', () => {
    expect(isRetryEligible(policy(), 0, fail('REJECTED'))).toBe(false);
    expect(isRetryEligible(policy({ retryOnErrorCodes: ['REJECTED'] }), 0, fail('REJECTED', true))).toBe(false);
  });
});

describe('backoff (addendum §10)', () => {
  it('fixed → retryInterval for every k', () => {
    expect([1, 2, 3, 10].map((k) => retryDelaySeconds(policy({ retryInterval: 7 }), k))).toEqual([7, 7, 7, 7]);
  });

  it('linear → retryInterval × k', () => {
    expect([1, 2, 3, 4].map((k) => retryDelaySeconds(policy({ retryInterval: 5, backoff: 'linear' }), k))).toEqual([5, 10, 15, 20]);
  });

  it('exponential → retryInterval × 2^(k−1)', () => {
    const p = policy({ retryInterval: 3, backoff: 'exponential' });
    expect([1, 2, 3, 4, 5].map((k) => retryDelaySeconds(p, k))).toEqual([3, 6, 12, 24, 48]);
  });

  it('maxRetryInterval caps the delay when set', () => {
    const p = policy({ retryInterval: 3, backoff: 'exponential', maxRetryInterval: 20 });
    expect([1, 2, 3, 4, 5].map((k) => retryDelaySeconds(p, k))).toEqual([3, 6, 12, 20, 20]);
    expect(retryDelaySeconds(policy({ retryInterval: 30, maxRetryInterval: 20 }), 1)).toBe(20);
    expect(retryDelaySeconds(policy({ retryInterval: 5, backoff: 'linear', maxRetryInterval: 12 }), 3)).toBe(12);
  });

  it('without jitter the delay in ms is the base delay × 1000 and random is not used', () => {
    const p = policy({ retryInterval: 3, backoff: 'exponential' });
    expect(retryDelayMs(p, 3, () => 0.99)).toBe(12_000);
    expect(retryDelayMs(p, 3, () => 0)).toBe(12_000);
  });

  it('with jitter the delay is uniform in [delay/2, delay]: random 0 → delay/2, 0.5 → 3/4, ~1 → delay', () => {
    const p = policy({ retryInterval: 10, jitter: true });
    expect(retryDelayMs(p, 1, () => 0)).toBe(5_000);
    expect(retryDelayMs(p, 1, () => 0.5)).toBe(7_500);
    expect(retryDelayMs(p, 1, () => 0.999_999_9)).toBe(10_000);
  });

  it('jitter applies after the cap', () => {
    const p = policy({ retryInterval: 10, backoff: 'exponential', maxRetryInterval: 15, jitter: true });
    expect(retryDelayMs(p, 4, () => 0)).toBe(7_500);
  });

  it('property: jittered delays stay within [delay/2, delay] in whole milliseconds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3600 }),
        fc.constantFrom('fixed' as const, 'linear' as const, 'exponential' as const),
        fc.option(fc.integer({ min: 1, max: 86_400 }), { nil: null }),
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retryInterval, backoff, maxRetryInterval, k, r) => {
          const base = retryDelaySeconds(policy({ retryInterval, backoff, maxRetryInterval }), k) * 1000;
          const ms = retryDelayMs(policy({ retryInterval, backoff, maxRetryInterval, jitter: true }), k, () => r);
          expect(Number.isInteger(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(base / 2);
          expect(ms).toBeLessThanOrEqual(base);
          if (maxRetryInterval !== null) expect(ms).toBeLessThanOrEqual(maxRetryInterval * 1000);
        },
      ),
    );
  });
});
