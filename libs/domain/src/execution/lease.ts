import type { LeaseRefusalReason } from '@po/contracts';
import type { PipelineStatus, StageStatus } from '../statuses.js';
import { nextStageStatus } from './transitions.js';

/** A lease lasts 60 s from acquire; a renewal extends it to at least now + 60 s (§11, §19.3). */
export const LEASE_SECONDS = 60;
export const LEASE_MS = LEASE_SECONDS * 1000;

/** The `reason` of a refused lease response (§12), a wire value. */
export type LeaseRefusal = LeaseRefusalReason;

/** Why an execution ended: an applied result, the sweeper (LEASE_EXPIRED, TIMEOUT), or a cancel. */
export type ExecutionEnd = 'result' | 'LEASE_EXPIRED' | 'TIMEOUT' | 'cancelled';

export interface ExecutionView {
  id: string;
  attempt: number | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  endedAt: Date | null;
  endReason: ExecutionEnd | null;
}

export interface LeaseView {
  pipelineStatus: PipelineStatus;
  stageStatus: StageStatus;
  currentExecutionId: string | null;
  /** The execution named by the request, if it exists for this stage. */
  execution: null | ExecutionView;
}

export type LeaseDecision =
  | { granted: true; attempt: number; leaseExpiresAt: Date }
  | { granted: false; reason: LeaseRefusal };

/** An execution has ended once it has an end time or an end reason. */
export function hasEnded(execution: Pick<ExecutionView, 'endedAt' | 'endReason'>): boolean {
  return execution.endedAt !== null || execution.endReason !== null;
}

/** A lease is expired from the instant leaseExpiresAt is reached (now ≥ leaseExpiresAt). */
export function isLeaseExpired(leaseExpiresAt: Date, now: Date): boolean {
  return leaseExpiresAt.getTime() <= now.getTime();
}

/** The request's execution when it is the stage's current one, else null. */
function currentExecution(view: LeaseView, executionId: string): ExecutionView | null {
  const e = view.execution;
  if (e === null || view.currentExecutionId === null) return null;
  return e.id === executionId && view.currentExecutionId === executionId ? e : null;
}

function refuse(reason: LeaseRefusal): LeaseDecision {
  return { granted: false, reason };
}

/**
 * §12 Acquire table, first matching row:
 * 1 pipeline Cancelled; 2 stage terminal; 3 not the current execution, or it has ended;
 * 4 it holds an unexpired lease (any caller); 5 its lease expired, expiry not yet processed;
 * 6 otherwise (stage Pending) → granted, attempt = stageAttempt + 1, leaseExpiresAt = now + 60 s.
 * Row 2 and row 6 follow the §7 table (transitions.ts): a terminal stage refuses every event, and
 * only a Pending stage can be leased; any other status at row 6 is refused as stale_execution.
 */
export function decideAcquire(
  view: LeaseView,
  request: { executionId: string },
  stageAttempt: number,
  now: Date,
): LeaseDecision {
  if (view.pipelineStatus === 'Cancelled') return refuse('pipeline_cancelled');
  const lease = nextStageStatus(view.stageStatus, 'lease');
  if (!lease.ok && lease.reason === 'stage_terminal') return refuse('stage_terminal');
  const e = currentExecution(view, request.executionId);
  if (e === null || hasEnded(e)) return refuse('stale_execution');
  if (e.leaseExpiresAt !== null) {
    return refuse(isLeaseExpired(e.leaseExpiresAt, now) ? 'lease_expired' : 'lease_held');
  }
  if (!lease.ok) return refuse('stale_execution');
  return { granted: true, attempt: stageAttempt + 1, leaseExpiresAt: new Date(now.getTime() + LEASE_MS) };
}

/**
 * §12 Renew table, first matching row:
 * 1 pipeline Cancelled; 2 stage terminal; 3 not the current execution, or it ended by an applied
 * result (or any end other than LEASE_EXPIRED/TIMEOUT); 4 lease expired, or ended by LEASE_EXPIRED
 * or TIMEOUT; 5 never leased, or leased by another worker; 6 otherwise → granted, same attempt,
 * leaseExpiresAt = max(current expiry, now + 60 s) (§19.3). Row 2 is the §7 table's refusal of a
 * terminal stage; past it, rows 3–5 decide whatever the status, since only a Running stage has a
 * leased execution that has not ended.
 */
export function decideRenew(
  view: LeaseView,
  request: { executionId: string; workerId: string },
  now: Date,
): LeaseDecision {
  if (view.pipelineStatus === 'Cancelled') return refuse('pipeline_cancelled');
  const renew = nextStageStatus(view.stageStatus, 'renew');
  if (!renew.ok && renew.reason === 'stage_terminal') return refuse('stage_terminal');
  const e = currentExecution(view, request.executionId);
  const expiredEnd = e !== null && (e.endReason === 'LEASE_EXPIRED' || e.endReason === 'TIMEOUT');
  if (e === null || (hasEnded(e) && !expiredEnd)) return refuse('stale_execution');
  if (expiredEnd || (e.leaseExpiresAt !== null && isLeaseExpired(e.leaseExpiresAt, now))) {
    return refuse('lease_expired');
  }
  if (e.leaseExpiresAt === null || e.attempt === null || e.leaseOwner !== request.workerId) {
    return refuse('not_owner');
  }
  const extended = Math.max(e.leaseExpiresAt.getTime(), now.getTime() + LEASE_MS);
  return { granted: true, attempt: e.attempt, leaseExpiresAt: new Date(extended) };
}
