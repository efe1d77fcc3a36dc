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
} from '@po/db';
import type { PipelineEventsProducer, StageResultMessage } from '@po/queues';
import type { Logger } from '@po/telemetry';

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
  const { result, stageId } = message;
  const applied = await deps.db.$transaction(async (tx) => {
    const state = await lockExecutionState(tx, stageId, result.executionId, { lockPipeline: true });
    if (!state || state.stage.applicationId !== message.applicationId) return null;
    const fenced = fenceResult(
      { pipelineStatus: state.pipelineStatus, stageStatus: state.stage.status, currentExecutionId: state.stage.currentExecutionId, execution: state.execution },
      { executionId: result.executionId, attempt: result.attempt },
    );
    if (fenced) {
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
    if (transition === 'fail') {
      const outcome = applyFailure(
        stage.options,
        { retryAttempt: stage.retryAttempt, failureCount: stage.failureCount },
        { errorCode: result.errorCode ?? null, retryable: result.retryable ?? null },
        now,
        deps.random,
      );
      await recordStageFailure(tx, stage.id, outcome, output);
    } else {
      await recordStageOutcome(tx, stage.id, { status: transition === 'park' ? 'WaitingForApproval' : 'Completed', output, now });
    }
    await endExecution(tx, result.executionId, 'result', now);
    await refreshPipelineStatus(tx, stage.pipelineId, now, { requestDispatch: true });
    return { pipelineId: stage.pipelineId };
  });
  if (!applied) return false;
  await deps.events.publish({ type: 'result.applied', applicationId: message.applicationId, pipelineId: applied.pipelineId, stageIds: [stageId] });
  return true;
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
