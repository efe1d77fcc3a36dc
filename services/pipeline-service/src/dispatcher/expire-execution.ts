import { applyFailure, expiryLogMessage, expiryOf } from '@po/domain';
import { endExecution, insertStageLogs, lockExecutionState, recordStageFailure, refreshPipelineStatus } from '@po/db';
import type { DispatcherDeps } from './deps.js';
import { recordOutcome } from './observe.js';

/**
 * Ends an execution whose lease lapsed (LEASE_EXPIRED) or whose handler timeout elapsed (TIMEOUT)
 * and applies the failure with the retry rules (addendum §10, §11). Returns the pipeline to
 * re-dispatch, or null when the execution was renewed, finished or ended meanwhile.
 */
export async function expireExecution(
  deps: DispatcherDeps,
  target: { executionId: string; stageId: number },
): Promise<number | null> {
  return deps.db.$transaction(async (tx) => {
    const state = await lockExecutionState(tx, target.stageId, target.executionId, { lockPipeline: true });
    const now = deps.clock();
    const execution = state?.execution;
    if (!state || !execution) return null;
    const code = expiryOf(execution, now);
    if (!code) return null;
    await endExecution(tx, execution.id, code, now);
    if (state.stage.status !== 'Running' || state.stage.currentExecutionId !== execution.id) return null;
    const outcome = applyFailure(
      state.stage.options,
      { retryAttempt: state.stage.retryAttempt, failureCount: state.stage.failureCount },
      { errorCode: code, retryable: null },
      now,
      deps.random,
    );
    await recordStageFailure(tx, state.stage.id, outcome);
    await insertStageLogs(tx, state.stage, [
      { message: expiryLogMessage(execution.id, execution.attempt, code), logLevel: 'Warning', created: now },
    ]);
    await refreshPipelineStatus(tx, state.stage.pipelineId, now, { requestDispatch: true });
    deps.logger.warn(
      { pipelineId: state.stage.pipelineId, stageId: state.stage.id, executionId: execution.id, code, outcome: outcome.status },
      'execution expired',
    );
    recordOutcome(state.stage.handlerName, outcome.status === 'RetryScheduled' ? 'retry_scheduled' : 'failed', code);
    return state.stage.pipelineId;
  });
}
