import { fenceResult, mergeContext, redactSecrets, resultTransition, stageStatusAfter } from '@po/domain';
import type { StageResultMessage } from '@po/queues';
import type { Batch, ItemOutcome } from '../batch.js';
import type { ApplyDecision } from '../observe.js';
import type { PassStage } from '../store.js';
import { appendWorkerStages } from './append.js';
import { fail } from './retry.js';

/**
 * Result (addendum §12, §13): a worker's result fenced (the lease holder's, on the current
 * execution and attempt of a Running stage) and applied in the engine's batch — output, logs,
 * context changes, worker-appended stages, and the stage Completed, WaitingForApproval, or failed
 * (retry.ts). Written with the rest of the batch by store.ts's one statement.
 */

const MAX_LOGS_PER_RESULT = 100;

export function applyResult(b: Batch, message: StageResultMessage): ItemOutcome {
  const { result } = message;
  const stage = b.stageById.get(message.stageId);
  if (!stage || stage.applicationId !== message.applicationId) return { kind: 'result', decision: { applied: false, reason: 'unknown_stage' } };
  const pipeline = b.pipelines.get(stage.pipelineId)!;
  const fenced = fenceResult(
    { pipelineStatus: pipeline.status, stageStatus: stage.status, currentExecutionId: stage.currentExecutionId, execution: stage.execution },
    { executionId: result.executionId, attempt: result.attempt, workerId: message.workerId },
  );
  if (fenced) return { kind: 'result', decision: { applied: false, reason: fenced }, stage };

  const logs = resultLogs(b, stage, message);
  appendWorkerStages(b, stage, result.appendedStages ?? [], logs);
  for (const l of logs) b.logs.push({ stageId: stage.id, pipelineId: stage.pipelineId, ...l });

  b.touch(stage);
  b.outputs.set(stage.id, result.result ?? null);
  b.endExecution(stage, 'result');
  const transition = resultTransition({ isSuccess: result.isSuccess ?? false, isWaitingForApproval: result.isWaitingForApproval ?? false });
  if (transition === 'fail') {
    const outcome = fail(b, stage, { errorCode: result.errorCode ?? null, retryable: result.retryable ?? null });
    const decision: ApplyDecision = { applied: true, outcome: outcome.status === 'RetryScheduled' ? 'retry_scheduled' : 'failed', errorCode: result.errorCode ?? null };
    return { kind: 'result', decision, stage };
  }
  stage.status = stageStatusAfter(stage.status, transition === 'park' ? 'park' : 'result-success');
  if (stage.status === 'Completed') stage.finishedAt = b.now;
  return { kind: 'result', decision: { applied: true, outcome: transition === 'park' ? 'waiting_for_approval' : 'completed', errorCode: result.errorCode ?? null }, stage };
}

/**
 * §13: the result's log lines (at most 100) with every current sensitive value redacted, and its
 * context changes merged; a sensitive value before or after this result's changes is redacted.
 */
function resultLogs(b: Batch, stage: PassStage, message: StageResultMessage): { message: string; logLevel: string; created: Date }[] {
  const updates = message.result.contextItems ?? [];
  const resultLogs = (message.result.logs ?? []).slice(0, MAX_LOGS_PER_RESULT);
  if (updates.length === 0 && resultLogs.length === 0) return [];
  const change = b.contextOf(stage.pipelineId);
  const before = change.after;
  const merged = mergeContext(before, updates);
  if (updates.length > 0) change.after = merged.items;
  const secrets = [...before, ...merged.items].filter((c) => c.isSensitive).map((c) => c.value);
  const logs = resultLogs.map((l) => ({
    message: redactSecrets(l.message, secrets),
    logLevel: l.logLevel ?? 'Information',
    created: l.created ? new Date(l.created) : b.now,
  }));
  if (merged.dropped.length > 0) {
    logs.push({ message: `Context items dropped (64-item limit): ${merged.dropped.join(', ')}`, logLevel: 'Warning', created: b.now });
  }
  return logs;
}
