import { isTerminalPipeline } from '../statuses.js';
import type { LeaseView } from './lease.js';
import { hasEnded } from './lease.js';
import { RESULT_EVENTS, canTransition } from './transitions.js';

export type FenceRefusal =
  | 'pipeline_terminal'
  | 'stage_not_running'
  | 'stale_execution'
  | 'attempt_mismatch'
  | 'execution_ended'
  | 'not_lease_holder';

const UUID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

/**
 * Whether an execution id could have been issued by a dispatch: those are UUIDs (addendum §9).
 * Execution ids are opaque to workers (addendum §1), so another string is not malformed input but
 * an id that can never be current: refused (lease) or fenced (result), never sent on.
 */
export function isIssuedExecutionId(id: string): boolean {
  return UUID.test(id);
}

/**
 * §12 fencing of results: a result is applied only when the pipeline is not terminal, the stage is
 * Running, executionId is the current execution, attempt equals that execution's attempt, the
 * execution has not ended, and the result was posted by the worker that holds (or last held) its
 * lease. Returns the first failing reason, or null when the result must be applied. The lease
 * expiry plays no part: a result after leaseExpiresAt but before the sweeper ended the attempt is
 * still applied.
 */
export function fenceResult(view: LeaseView, result: { executionId: string; attempt: number; workerId: string }): null | FenceRefusal {
  if (isTerminalPipeline(view.pipelineStatus)) return 'pipeline_terminal';
  if (!RESULT_EVENTS.every((event) => canTransition(view.stageStatus, event))) return 'stage_not_running';
  const e = view.execution;
  if (e === null || view.currentExecutionId !== result.executionId || e.id !== result.executionId) {
    return 'stale_execution';
  }
  if (e.attempt !== result.attempt) return 'attempt_mismatch';
  if (hasEnded(e)) return 'execution_ended';
  // The same workerId, not the same session: a re-bootstrap of the lease holder keeps its worker id.
  if (e.leaseOwner !== result.workerId) return 'not_lease_holder';
  return null;
}
