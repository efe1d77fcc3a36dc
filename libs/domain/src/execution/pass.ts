import type { PipelineStatus, StageStatus } from '../statuses.js';
import { isTerminalPipeline } from '../statuses.js';
import { derivePipelineStatus } from './pipeline-status.js';

/**
 * §8, §9: what a dispatcher pass leaves behind once its stage changes are decided: the derived
 * pipeline status, whether the pipeline became terminal in this pass (finishedAt is set then),
 * and when the next pass is due (the earliest retry still scheduled), or null.
 */
export function passOutcome(
  current: PipelineStatus,
  stages: readonly { status: StageStatus; nextRetryAt: Date | null }[],
  now: Date,
): { status: PipelineStatus; finished: boolean; nextPassAt: Date | null } {
  const status = derivePipelineStatus({ current, dispatched: true, stageStatuses: stages.map((s) => s.status) });
  let next: number | null = null;
  for (const s of stages) {
    if (s.status !== 'RetryScheduled' || s.nextRetryAt === null) continue;
    const at = Math.max(s.nextRetryAt.getTime(), now.getTime());
    if (next === null || at < next) next = at;
  }
  return {
    status,
    finished: isTerminalPipeline(status) && !isTerminalPipeline(current),
    nextPassAt: isTerminalPipeline(status) || next === null ? null : new Date(next),
  };
}

/**
 * The order in which candidates of one application take free slots (§7): the stages already
 * waiting as Throttled first, oldest stage id first, then stages that just became ready (NotStarted,
 * due retries), oldest first — a pipeline that frees a slot does not take it back from stages that
 * were queued before its next one was ready.
 */
export function slotOrder(a: { id: number; status: StageStatus }, b: { id: number; status: StageStatus }): number {
  const waiting = Number(b.status === 'Throttled') - Number(a.status === 'Throttled');
  return waiting !== 0 ? waiting : a.id - b.id;
}

