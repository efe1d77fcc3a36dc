import { applyFailure, type FailureOutcome } from '@po/domain';
import type { Batch } from '../batch.js';
import type { PassStage } from '../store.js';

/**
 * Retry (addendum §7, §10): a failed attempt moves its stage to RetryScheduled (with the backoff's
 * next time, from the stage's retry policy) or Failed. A due retry is dispatched by the next pass
 * (dispatch.ts's planning); its wake-up is a delayed `pipeline.wake` event (engine.ts).
 */

/** §7, §10: a failure moves the stage to RetryScheduled or Failed. */
export function fail(b: Batch, stage: PassStage, failure: { errorCode: string | null; retryable: boolean | null }): FailureOutcome {
  const outcome = applyFailure(stage.options, { retryAttempt: stage.retryAttempt, failureCount: stage.failureCount }, failure, b.now, b.random);
  stage.status = outcome.status;
  stage.retryAttempt = outcome.retryAttempt;
  stage.failureCount = outcome.failureCount;
  stage.lastErrorCode = outcome.lastErrorCode;
  stage.lastFailedAt = outcome.lastFailedAt;
  stage.failureDisposition = outcome.failureDisposition;
  stage.nextRetryAt = outcome.nextRetryAt;
  if (outcome.finishedAt) stage.finishedAt = outcome.finishedAt;
  return outcome;
}
