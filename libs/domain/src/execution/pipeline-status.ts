import type { PipelineStatus, StageStatus } from '../statuses.js';
import { isTerminalStage } from '../statuses.js';
import { PIPELINE_STATUS_BY_STAGES, nextPipelineStatus } from './transitions.js';

/**
 * Pipeline status derivation (addendum §8, resolution §19.1). A `current` the §8 table lets no stage
 * change move (Completed, Failed, Cancelled) never changes. Otherwise the first matching rule wins
 * (3–5 are PIPELINE_STATUS_BY_STAGES):
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
  if (!nextPipelineStatus(current, 'stage-change').ok) return current;
  if (stageStatuses.every(isTerminalStage)) {
    return stageStatuses.includes('Failed') ? 'Failed' : 'Completed';
  }
  if (!dispatched) return 'NotStarted';
  const present = new Set(stageStatuses);
  const rule = PIPELINE_STATUS_BY_STAGES.find((r) => r.anyOf.some((s) => present.has(s)));
  return rule ? rule.status : 'Running';
}
