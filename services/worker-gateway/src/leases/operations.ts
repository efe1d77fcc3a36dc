import { randomUUID } from 'node:crypto';
import { LEASE_SECONDS, NotFound, Unauthorized, decideAcquire, decideRenew, isIssuedExecutionId, type LeaseDecision, type LeaseView } from '@po/domain';
import { sqlOf } from '@po/db';
import { acquireLease, extendLease, grantLease, lockExecutionState, tryRenewLease, type ExecutionState, type LeaseGrant } from '@po/engine';
import { leaseSlowPaths } from '@po/telemetry';
import { hashSecret } from '@po/http';
import type { Deps } from '../deps.js';
import { authenticateSession, type PendingSession } from '../sessions/auth.js';
import { leaseHolders } from './holders.js';
import { recordLease } from './observe.js';

export interface LeaseResponse {
  acquired: boolean;
  attempt: number | null;
  leaseExpiresAt: string | null;
  reason: string | null;
}

const refused = (reason: string): LeaseResponse => ({ acquired: false, attempt: null, leaseExpiresAt: null, reason });
const granted = (g: LeaseGrant): LeaseResponse => ({ acquired: true, attempt: g.attempt, leaseExpiresAt: g.leaseExpiresAt.toISOString(), reason: null });
// Never any stage's execution: a malformed execution id takes the slow path, which refuses it.
const NO_EXECUTION = randomUUID();

type Operation = 'acquire' | 'renew';

/** workers.worker_id and stage_executions.lease_owner are varchar(64). */
const WORKER_ID_MAX_CHARS = 64;

function leaseView(state: ExecutionState): LeaseView {
  return {
    pipelineStatus: state.pipelineStatus,
    stageStatus: state.stage.status,
    currentExecutionId: state.stage.currentExecutionId,
    execution: state.execution,
  };
}

/**
 * POST /stages/{id}/lease/acquire and /renew (addendum §12): the grant is one compare-and-set
 * statement that also checks the session (decision 0062); only when it matches nothing does the
 * slow path run, in a transaction, to answer 401, 404 or the first refusal row of the tables.
 */
export async function lease(deps: Deps, operation: Operation, session: PendingSession, stageId: number, body: { executionId: string; workerId: string }): Promise<LeaseResponse> {
  const started = Date.now();
  const request = {
    sessionTokenHash: session.tokenHash,
    stageId,
    executionId: isIssuedExecutionId(body.executionId) ? body.executionId : NO_EXECUTION,
    workerId: body.workerId,
    leaseSeconds: LEASE_SECONDS,
  };
  const sql = sqlOf(deps.db);
  // A workerId longer than the column that stores worker ids is nobody's: PostgreSQL would refuse it
  // as a parameter of the hot statement, so it goes to the slow path, which answers 401.
  const possible = body.workerId.length <= WORKER_ID_MAX_CHARS;
  // A message is published only once its dispatch has committed (decision 0121): the stage the
  // worker names is visible, so one statement decides (the waits of decisions 0105 and 0109 are gone).
  const fast = !possible ? null : operation === 'acquire' ? await acquireLease(sql, request) : await tryRenewLease(sql, request);
  if (fast) {
    leaseHolders(deps).granted(body.executionId, body.workerId);
    const response = granted(fast);
    await recordLease(operation, response, undefined, body.executionId, started, deps.db, stageId);
    return response;
  }
  leaseSlowPaths().labels(operation).inc();
  let seen: ExecutionState | undefined;
  // Before the transaction, not inside it: the session read takes a connection of its own, and a
  // transaction holding one while it waits for a second could, with as many concurrent slow paths
  // as the pool has connections (racing acquires), wait out the pool's timeout and answer 503.
  const s = await authenticateSession(deps.db, session.token, { now: deps.clock(), checkExpiry: true });
  session.verified = s;
  if (body.workerId !== s.workerId) throw new Unauthorized('workerId is not the worker of this session.');
  const response = await deps.db.$transaction(async (tx) => {
    const state = await lockExecutionState(tx, stageId, body.executionId, { lockPipeline: false });
    if (!state || state.stage.applicationId !== s.applicationId) throw new NotFound(`Stage ${stageId} not found.`);
    seen = state;
    const decision: LeaseDecision =
      operation === 'acquire' ? decideAcquire(leaseView(state), body, state.stage.attempt, state.now) : decideRenew(leaseView(state), body, state.now);
    if (!decision.granted) return refused(decision.reason);
    // The hot statement lost a race that the state has since settled (the stage just became Pending).
    if (operation === 'acquire') {
      await grantLease(tx, state, { executionId: body.executionId, attempt: decision.attempt, workerId: s.workerId, now: state.now, leaseExpiresAt: decision.leaseExpiresAt });
    } else {
      await extendLease(tx, body.executionId, decision.leaseExpiresAt);
    }
    return granted({ attempt: decision.attempt, leaseExpiresAt: decision.leaseExpiresAt });
  });
  if (response.acquired) leaseHolders(deps).granted(body.executionId, s.workerId);
  await recordLease(operation, response, seen, body.executionId, started, deps.db, stageId);
  return response;
}

/**
 * The lease a pull asked for (decision 0098): the same acquisition as POST
 * /stages/{id}/lease/acquire, for the stage just delivered. Undefined when it got no answer that
 * call would give as 200 (a bad session, a database error): the worker then calls acquire itself
 * and meets that error there, so a pull never fails after it has taken a message.
 */
export async function leaseOnPull(
  deps: Deps,
  sessionToken: string,
  message: { stageId: number; executionId: string },
  workerId: string,
): Promise<LeaseResponse | undefined> {
  try {
    const session: PendingSession = { token: sessionToken, tokenHash: hashSecret(sessionToken) };
    return await lease(deps, 'acquire', session, message.stageId, { executionId: message.executionId, workerId });
  } catch (err) {
    deps.logger.debug({ err, stageId: message.stageId }, 'lease on pull not answered; the worker acquires on its own');
    return undefined;
  }
}
