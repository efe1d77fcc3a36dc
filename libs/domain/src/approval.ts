import type { StageStatus } from './statuses.js';
import { canTransition, resumeEvent } from './execution/transitions.js';

export type ResumeDecision =
  | { kind: 'apply' }
  | { kind: 'repeat' }
  | { kind: 'conflict'; recorded: boolean }
  | { kind: 'not_waiting' };

/**
 * POST /stages/{id}/resume (addendum §13): a waiting stage takes the decision; the same decision
 * again is a no-op; the opposite one conflicts; a stage with no decision that is not waiting refuses.
 * "Waiting" is the §7 table's: the status that `approve` and `reject` move.
 */
export function decideResume(stage: { status: StageStatus; approved: boolean | null }, approved: boolean): ResumeDecision {
  if (stage.approved !== null) {
    return stage.approved === approved ? { kind: 'repeat' } : { kind: 'conflict', recorded: stage.approved };
  }
  return canTransition(stage.status, resumeEvent(approved)) ? { kind: 'apply' } : { kind: 'not_waiting' };
}

/** The Warning stage log a rejection writes (addendum §7). */
export function rejectionLogMessage(reason: string | null | undefined): string {
  return reason ? `Rejected: ${reason}` : 'Rejected';
}
