import { TERMINAL_ERROR_CODES } from '../statuses.js';

/** The retry options of a stage (addendum §10; StageOptions). */
export interface RetryPolicy {
  retryInterval: number;
  maxRetries: number;
  backoff: 'fixed' | 'linear' | 'exponential';
  maxRetryInterval: number | null;
  jitter: boolean;
  retryOnErrorCodes: readonly string[];
}

/** A failure: `retryable` is the result's flag (null when absent). */
export interface FailureInput {
  errorCode: string | null;
  retryable: boolean | null;
}

/** The error code of a rejected approval; never retried (§10). */
export const REJECTED_ERROR_CODE = 'REJECTED';

const TERMINAL_CODES: ReadonlySet<string> = new Set<string>(TERMINAL_ERROR_CODES);

/**
 * §10: a retry is scheduled only when all of these hold (n = retryAttempt before this failure):
 * 1. retryInterval > 0 and maxRetries > 0; 2. n < maxRetries; 3. retryOnErrorCodes is empty or
 * contains the code (a null code never matches); 4. the code is not a terminal error code;
 * 5. retryable is not false. REJECTED is never retried.
 */
export function isRetryEligible(policy: RetryPolicy, retryAttempt: number, failure: FailureInput): boolean {
  const code = failure.errorCode;
  if (code === REJECTED_ERROR_CODE) return false;
  if (!(policy.retryInterval > 0 && policy.maxRetries > 0)) return false;
  if (!(retryAttempt < policy.maxRetries)) return false;
  if (policy.retryOnErrorCodes.length > 0 && (code === null || !policy.retryOnErrorCodes.includes(code))) {
    return false;
  }
  if (code !== null && TERMINAL_CODES.has(code)) return false;
  return failure.retryable !== false;
}

/**
 * §10 base delay in seconds for retry number k (1-based), capped by maxRetryInterval when set:
 * fixed → retryInterval; linear → retryInterval × k; exponential → retryInterval × 2^(k−1).
 */
export function retryDelaySeconds(policy: RetryPolicy, k: number): number {
  const base =
    policy.backoff === 'linear'
      ? policy.retryInterval * k
      : policy.backoff === 'exponential'
        ? policy.retryInterval * 2 ** (k - 1)
        : policy.retryInterval;
  return policy.maxRetryInterval === null ? base : Math.min(base, policy.maxRetryInterval);
}

/**
 * The delay in whole milliseconds. With jitter the delay is drawn uniformly from [delay/2, delay]
 * using random() in [0, 1); the result is rounded to the millisecond and kept inside those bounds.
 */
export function retryDelayMs(policy: RetryPolicy, k: number, random: () => number): number {
  const full = retryDelaySeconds(policy, k) * 1000;
  if (!policy.jitter || !Number.isFinite(full)) return Math.round(full);
  const half = full / 2;
  const drawn = Math.round(half + random() * half);
  return Math.min(Math.max(drawn, Math.ceil(half)), Math.floor(full));
}
