import type { FailureDisposition } from '@po/contracts';
import type { StageStatus } from '../statuses.js';
import type { FailureInput, RetryPolicy } from './retry.js';
import { isRetryEligible, retryDelayMs } from './retry.js';
import { STAGE_TRANSITIONS } from './transitions.js';

export interface StageCounters {
  retryAttempt: number;
  failureCount: number;
}

export interface FailureOutcome {
  status: 'RetryScheduled' | 'Failed';
  /** k when retried, else unchanged. */
  retryAttempt: number;
  /** + 1. */
  failureCount: number;
  /** The failure's code (null when the result had none). */
  lastErrorCode: string | null;
  /** now. */
  lastFailedAt: Date;
  failureDisposition: FailureDisposition;
  /** lastFailedAt + delay (ms precision) when retried. */
  nextRetryAt: Date | null;
  /** now when Failed, else null. */
  finishedAt: Date | null;
}

/** §7: a failure moves a Running stage to the first target when §10 schedules a retry, else to the second. */
const [RETRY, TERMINAL] = STAGE_TRANSITIONS.Running['result-failure'].to;

/** The largest time a Date can hold (ECMAScript: ±8.64e15 ms). */
const MAX_DATE_MS = 8.64e15;

/**
 * §7 + §10: applies a failure (a failure result, LEASE_EXPIRED or TIMEOUT) to a Running stage.
 * Eligible → RetryScheduled with retryAttempt k = n + 1 and nextRetryAt = now + delay; otherwise
 * Failed with finishedAt = now. Either way failureCount + 1, lastErrorCode, lastFailedAt = now.
 */
export function applyFailure(
  policy: RetryPolicy,
  counters: StageCounters,
  failure: FailureInput,
  now: Date,
  random: () => number,
): FailureOutcome {
  const at = now.getTime();
  const common = {
    failureCount: counters.failureCount + 1,
    lastErrorCode: failure.errorCode,
    lastFailedAt: new Date(at),
  };
  if (isRetryEligible(policy, counters.retryAttempt, failure)) {
    const k = counters.retryAttempt + 1;
    const delay = retryDelayMs(policy, k, random);
    return {
      ...common,
      status: RETRY,
      retryAttempt: k,
      failureDisposition: 'retryable',
      nextRetryAt: new Date(Math.min(at + delay, MAX_DATE_MS)),
      finishedAt: null,
    };
  }
  return {
    ...common,
    status: TERMINAL,
    retryAttempt: counters.retryAttempt,
    failureDisposition: 'terminal',
    nextRetryAt: null,
    finishedAt: new Date(at),
  };
}

/**
 * §4, §7: `nextRetryAt` names a retry that will happen, so it exists only while the stage is
 * RetryScheduled. Whatever moves a stage on (the retry falls due and the stage is dispatched or
 * Throttled at the cap, the pipeline is cancelled) leaves no retry behind: null.
 */
export function nextRetryAtOf(status: StageStatus, nextRetryAt: Date | null): Date | null {
  return status === 'RetryScheduled' ? nextRetryAt : null;
}
