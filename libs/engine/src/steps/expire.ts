import { expiryLogMessage, expiryOf } from '@po/domain';
import type { Batch, ItemOutcome } from '../batch.js';
import { fail } from './retry.js';

/**
 * Expire (addendum §11): an execution whose lease or handler timeout has passed, by the database
 * clock, is ended (LEASE_EXPIRED or TIMEOUT) and its attempt failed (retry.ts). The sweeper finds
 * them (libs/db sweeps.ts) and brings them here; the batch's write ends the execution only while it
 * is still expired, so a renewal that lands meanwhile wins.
 */

/** §11: ends an execution whose lease or handler timeout passed (by the database clock) and fails its attempt. */
export function expire(b: Batch, item: { stageId: number; executionId: string }): ItemOutcome {
  const stage = b.stageById.get(item.stageId);
  if (!stage || stage.currentExecutionId !== item.executionId || !stage.execution || stage.execution.id !== item.executionId) {
    // Not (or no longer) the stage's current execution: only end it, if it is still expired.
    b.ended.push({ id: item.executionId, reason: 'LEASE_EXPIRED' });
    return { kind: 'expiry', expired: false };
  }
  const execution = stage.execution;
  const code = expiryOf(execution, b.now);
  if (!code) return { kind: 'expiry', expired: false };
  b.endExecution(stage, code);
  if (stage.status !== 'Running') return { kind: 'expiry', expired: false };
  b.touch(stage);
  const outcome = fail(b, stage, { errorCode: code, retryable: null });
  b.logs.push({
    stageId: stage.id,
    pipelineId: stage.pipelineId,
    message: expiryLogMessage(execution.id, execution.attempt, code),
    logLevel: 'Warning',
    created: b.now,
  });
  return { kind: 'expiry', expired: true, stage, code, outcome: outcome.status === 'RetryScheduled' ? 'retry_scheduled' : 'failed' };
}
