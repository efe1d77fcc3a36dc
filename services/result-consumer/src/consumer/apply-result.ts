import {
  applyFailure,
  checkAddedStages,
  fenceResult,
  mergeContext,
  redactSecrets,
  resultTransition,
  stageFromInfo,
} from '@po/domain';
import {
  endExecution,
  insertStageLogs,
  insertStages,
  liveContext,
  lockExecutionState,
  recordStageFailure,
  recordStageOutcome,
  refreshPipelineStatus,
  stageNamesOf,
  writeContextChanges,
  type Db,
  type DbOrTx,
  type ExecutionState,
} from '@po/db';
import type { PipelineEventsProducer, StageResultMessage } from '@po/queues';
import { rememberSensitive, traceparentOf, type Logger } from '@po/telemetry';
import { recordApply, type ApplyDecision, type StageOutcome } from './observe.js';

export interface ConsumerDeps {
  db: Db;
  events: PipelineEventsProducer;
  logger: Logger;
  clock: () => Date;
  random: () => number;
}

const MAX_LOGS_PER_RESULT = 100;

/**
 * Applies one accepted result in one transaction (addendum §13), fenced on executionId + attempt +
 * Running (§12). A stale or duplicate result changes nothing and is logged at warn, so applying
 * the same message twice is harmless. Returns whether it was applied.
 */
export async function applyResult(deps: ConsumerDeps, message: StageResultMessage): Promise<boolean> {
  const started = Date.now();
  const { result, stageId } = message;
  // What the transaction saw and decided, for metrics and the apply span (observe.ts).
  let seen: ExecutionState | undefined;
  let decision: ApplyDecision = { applied: false, reason: 'unknown_stage' };
  const applied = await deps.db.$transaction(async (tx) => {
    const state = await lockExecutionState(tx, stageId, result.executionId, { lockPipeline: true });
    if (!state || state.stage.applicationId !== message.applicationId) return null;
    seen = state;
    const fenced = fenceResult(
      { pipelineStatus: state.pipelineStatus, stageStatus: state.stage.status, currentExecutionId: state.stage.currentExecutionId, execution: state.execution },
      { executionId: result.executionId, attempt: result.attempt },
    );
    if (fenced) {
      decision = { applied: false, reason: fenced };
      deps.logger.warn({ stageId, executionId: result.executionId, attempt: result.attempt, reason: fenced }, 'result discarded');
      return null;
    }
    const now = deps.clock();
    const { stage } = state;
    const updates = result.contextItems ?? [];
    const resultLogs = (result.logs ?? []).slice(0, MAX_LOGS_PER_RESULT);
    // The context is read only when this result changes it or has log lines to redact.
    const contextBefore = updates.length > 0 || resultLogs.length > 0 ? await liveContext(tx, stage.pipelineId) : [];
    const merged = mergeContext(contextBefore, updates);
    if (updates.length > 0) await writeContextChanges(tx, stage.pipelineId, contextBefore, merged.items);
    // Redact with every value that is sensitive before or after this result's context changes.
    const secrets = [...contextBefore, ...merged.items].filter((c) => c.isSensitive).map((c) => c.value);
    rememberSensitive(secrets);
    const logs = resultLogs.map((l) => ({
      message: redactSecrets(l.message, secrets),
      logLevel: l.logLevel ?? 'Information',
      created: l.created ? new Date(l.created) : now,
    }));
    if (merged.dropped.length > 0) {
      logs.push({ message: `Context items dropped (64-item limit): ${merged.dropped.join(', ')}`, logLevel: 'Warning', created: now });
    }
    await appendWorkerStages(tx, stage, result.appendedStages ?? [], logs, now);
    await insertStageLogs(tx, stage, logs);

    const output = result.result ?? null;
    const transition = resultTransition({ isSuccess: result.isSuccess ?? false, isWaitingForApproval: result.isWaitingForApproval ?? false });
    let stageOutcome: StageOutcome = transition === 'park' ? 'waiting_for_approval' : 'completed';
    if (transition === 'fail') {
      const outcome = applyFailure(
        stage.options,
        { retryAttempt: stage.retryAttempt, failureCount: stage.failureCount },
        { errorCode: result.errorCode ?? null, retryable: result.retryable ?? null },
        now,
        deps.random,
      );
      await recordStageFailure(tx, stage.id, outcome, output);
      stageOutcome = outcome.status === 'RetryScheduled' ? 'retry_scheduled' : 'failed';
    } else {
      await recordStageOutcome(tx, stage.id, { status: transition === 'park' ? 'WaitingForApproval' : 'Completed', output, now });
    }
    await endExecution(tx, result.executionId, 'result', now);
    await refreshPipelineStatus(tx, stage.pipelineId, now, { requestDispatch: true });
    decision = { applied: true, outcome: stageOutcome, errorCode: result.errorCode ?? null };
    return { pipelineId: stage.pipelineId };
  });
  const span = recordApply(message, seen, decision, started);
  try {
    if (!applied) return false;
    await deps.events.publish({
      type: 'result.applied',
      applicationId: message.applicationId,
      pipelineId: applied.pipelineId,
      stageIds: [stageId],
      traceparent: span && traceparentOf(span),
    });
    return true;
  } finally {
    span?.end();
  }
}

/** Worker-appended stages go at the end of the pipeline (addendum §5.2), re-checked at apply time. */
async function appendWorkerStages(
  tx: DbOrTx,
  stage: { id: number; pipelineId: number; applicationId: number },
  items: NonNullable<StageResultMessage['result']['appendedStages']>,
  logs: { message: string; logLevel: string; created: Date }[],
  now: Date,
): Promise<void> {
  if (items.length === 0) return;
  const names = await stageNamesOf(tx, stage.pipelineId);
  const stages = items.map(stageFromInfo);
  const errors = checkAddedStages(names, stages, '/appendedStages');
  if (errors.length > 0) {
    logs.push({ message: `Appended stages refused: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, logLevel: 'Warning', created: now });
    return;
  }
  await insertStages(tx, BigInt(stage.pipelineId), stage.applicationId, names.length, stages);
}
