import type { FailureInput } from './retry.js';

export type ExpiryCode = 'TIMEOUT' | 'LEASE_EXPIRED';

/**
 * §11: which expiry applies to a running execution now. TIMEOUT (timeoutAt reached) takes
 * precedence over LEASE_EXPIRED (leaseExpiresAt reached); null when neither, or when the
 * execution has already ended. A time counts as passed from the instant it is reached (now ≥ t).
 */
export function expiryOf(
  execution: { leaseExpiresAt: Date | null; timeoutAt: Date | null; endedAt: Date | null },
  now: Date,
): ExpiryCode | null {
  if (execution.endedAt !== null) return null;
  const t = now.getTime();
  if (execution.timeoutAt !== null && execution.timeoutAt.getTime() <= t) return 'TIMEOUT';
  if (execution.leaseExpiresAt !== null && execution.leaseExpiresAt.getTime() <= t) return 'LEASE_EXPIRED';
  return null;
}

/** §11: the handler timeout runs from the lease grant of the attempt; renewals do not move it. */
export function timeoutAtFor(leaseGrantedAt: Date, timeOutSeconds: number | null): Date | null {
  return timeOutSeconds === null ? null : new Date(leaseGrantedAt.getTime() + timeOutSeconds * 1000);
}

/** §7, §11: both expiry codes are failures marked retryable (retryOnErrorCodes still filters them). */
export function expiryFailure(code: ExpiryCode): FailureInput {
  return { errorCode: code, retryable: true };
}

/**
 * The Warning stage log the sweeper writes: `Execution {executionId} attempt {n} failed: {code}`.
 * An execution without an attempt number (never leased) omits the ` attempt {n}` part.
 */
export function expiryLogMessage(executionId: string, attempt: number | null, code: ExpiryCode): string {
  const which = attempt === null ? '' : ` attempt ${attempt}`;
  return `Execution ${executionId}${which} failed: ${code}`;
}
