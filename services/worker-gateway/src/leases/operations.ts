import { NotFound, Unauthorized, decideAcquire, decideRenew, type LeaseView } from '@po/domain';
import { extendLease, grantLease, lockExecutionState, type ExecutionState } from '@po/db';
import type { Deps } from '../deps.js';
import type { SessionState } from '../sessions/auth.js';
import { recordLease } from './observe.js';

export interface LeaseResponse {
  acquired: boolean;
  attempt: number | null;
  leaseExpiresAt: string | null;
  reason: string | null;
}

const refused = (reason: string): LeaseResponse => ({ acquired: false, attempt: null, leaseExpiresAt: null, reason });

function leaseView(state: ExecutionState): LeaseView {
  return {
    pipelineStatus: state.pipelineStatus,
    stageStatus: state.stage.status,
    currentExecutionId: state.stage.currentExecutionId,
    execution: state.execution,
  };
}

/** Session worker must be the body's workerId (401), the stage the session application's (404). */
async function ownState(deps: Deps, session: SessionState, stageId: number, body: { executionId: string; workerId: string }, tx: Parameters<typeof lockExecutionState>[0]) {
  if (body.workerId !== session.workerId) throw new Unauthorized('workerId is not the worker of this session.');
  const state = await lockExecutionState(tx, stageId, body.executionId, { lockPipeline: false });
  if (!state || state.stage.applicationId !== session.applicationId) throw new NotFound(`Stage ${stageId} not found.`);
  return state;
}

/** POST /stages/{id}/lease/acquire: addendum §12 Acquire table, in one transaction. */
export async function acquireLease(deps: Deps, session: SessionState, stageId: number, body: { executionId: string; workerId: string }): Promise<LeaseResponse> {
  const started = Date.now();
  let seen: ExecutionState | undefined;
  const response = await deps.db.$transaction(async (tx) => {
    const state = await ownState(deps, session, stageId, body, tx);
    seen = state;
    const now = deps.clock();
    const decision = decideAcquire(leaseView(state), body, state.stage.attempt, now);
    if (!decision.granted) return refused(decision.reason);
    await grantLease(tx, state, { executionId: body.executionId, attempt: decision.attempt, workerId: session.workerId, now, leaseExpiresAt: decision.leaseExpiresAt });
    return { acquired: true, attempt: decision.attempt, leaseExpiresAt: decision.leaseExpiresAt.toISOString(), reason: null };
  });
  recordLease('acquire', response, seen, body.executionId, started);
  return response;
}

/** POST /stages/{id}/lease/renew: addendum §12 Renew table; the delivery's visibility timeout is not extended. */
export async function renewLease(deps: Deps, session: SessionState, stageId: number, body: { executionId: string; workerId: string }): Promise<LeaseResponse> {
  const started = Date.now();
  let seen: ExecutionState | undefined;
  const response = await deps.db.$transaction(async (tx) => {
    const state = await ownState(deps, session, stageId, body, tx);
    seen = state;
    const decision = decideRenew(leaseView(state), body, deps.clock());
    if (!decision.granted) return refused(decision.reason);
    await extendLease(tx, body.executionId, decision.leaseExpiresAt);
    return { acquired: true, attempt: decision.attempt, leaseExpiresAt: decision.leaseExpiresAt.toISOString(), reason: null };
  });
  recordLease('renew', response, seen, body.executionId, started);
  return response;
}
