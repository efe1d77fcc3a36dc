import type { PipelineStatus, StageStatus } from '../statuses.js';
import { isTerminalPipeline, isTerminalStage } from '../statuses.js';

const ACTIVE: ReadonlySet<StageStatus> = new Set<StageStatus>(['Pending', 'Running', 'Throttled']);

/**
 * Pipeline status derivation (addendum §8, resolution §19.1). A terminal `current` (Completed,
 * Failed, Cancelled) never changes. Otherwise the first matching rule wins:
 * 1. all stages terminal → Failed if any Failed, else Completed (an empty list counts as all terminal);
 * 2. not yet dispatched → NotStarted;
 * 3. any Pending, Running or Throttled → Running;
 * 4. any WaitingForApproval → Paused;
 * 5. any RetryScheduled → Pending;
 * 6. otherwise → Running (NotStarted stages about to be dispatched).
 */
export function derivePipelineStatus(input: {
  current: PipelineStatus;
  dispatched: boolean;
  stageStatuses: readonly StageStatus[];
}): PipelineStatus {
  const { current, dispatched, stageStatuses } = input;
  if (isTerminalPipeline(current)) return current;
  if (stageStatuses.every(isTerminalStage)) {
    return stageStatuses.includes('Failed') ? 'Failed' : 'Completed';
  }
  if (!dispatched) return 'NotStarted';
  if (stageStatuses.some((s) => ACTIVE.has(s))) return 'Running';
  if (stageStatuses.includes('WaitingForApproval')) return 'Paused';
  if (stageStatuses.includes('RetryScheduled')) return 'Pending';
  return 'Running';
}
