import { isTerminalPipeline } from '../statuses.js';
import type { LeaseView } from './lease.js';
import { hasEnded } from './lease.js';

export type FenceRefusal = 'pipeline_terminal' | 'stage_not_running' | 'stale_execution' | 'attempt_mismatch' | 'execution_ended';

/**
 * §12 fencing of results: a result is applied only when the pipeline is not terminal, the stage is
 * Running, executionId is the current execution, attempt equals that execution's attempt, and the
 * execution has not ended. Returns the first failing reason, or null when the result must be
 * applied. The lease expiry plays no part: a result after leaseExpiresAt but before the sweeper
 * ended the attempt is still applied.
 */
export function fenceResult(view: LeaseView, result: { executionId: string; attempt: number }): null | FenceRefusal {
  if (isTerminalPipeline(view.pipelineStatus)) return 'pipeline_terminal';
  if (view.stageStatus !== 'Running') return 'stage_not_running';
  const e = view.execution;
  if (e === null || view.currentExecutionId !== result.executionId || e.id !== result.executionId) {
    return 'stale_execution';
  }
  if (e.attempt !== result.attempt) return 'attempt_mismatch';
  if (hasEnded(e)) return 'execution_ended';
  return null;
}
