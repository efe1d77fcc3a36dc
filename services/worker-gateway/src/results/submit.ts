import {
  BrokerUnavailable,
  Forbidden,
  NotFound,
  ValidationFailed,
  checkAddedStages,
  isIssuedExecutionId,
  stageFromInfo,
  type FenceRefusal,
} from '@po/domain';
import { stageNamesOf } from '@po/db';
import type { StageResultSubmit } from '@po/contracts';
import { markFailed, rememberSensitiveItems, resultsAccepted, resultsFenced, traceparentOf } from '@po/telemetry';
import type { Deliveries, Delivery } from '../deliveries/deliveries.js';
import type { Deps } from '../deps.js';
import { leaseHolders } from '../leases/holders.js';
import { readStageOwner, type ResultCredentials, type StageOwner } from './credentials.js';
import { startResultSpan } from './observe.js';

/**
 * POST /stages/{id}/result (api-spec Behaviour rule 3, addendum §5.2, §13, §15): after the
 * credentials (checkResultCredentials) and the stage (stageOfResult), checks shape and
 * ownership, then publishes persistently. 202 means Redis confirmed the job, not that it was
 * applied: fencing happens in the result-consumer, or here for a result it would discard for
 * certain (fencedAtIntake), which gets the same 202 and is not published.
 */
export async function submitResult(
  deps: Deps,
  caller: ResultCredentials,
  stage: StageOwner | null,
  stageId: number,
  body: StageResultSubmit,
): Promise<{ accepted: true; stageId: number; executionId: string }> {
  // The logger censors the values this result marks sensitive from now on.
  if (body.contextItems) rememberSensitiveItems(body.contextItems);
  if (body.stageId !== stageId) throw ValidationFailed.at('/stageId', 'must equal the stageId of the route');
  if (!stage) throw new NotFound(`Stage ${stageId} not found.`);
  if (stage.applicationId !== caller.applicationId) throw new Forbidden(`Stage ${stageId} belongs to another application.`);
  if (body.pipelineId !== undefined && body.pipelineId !== null && body.pipelineId !== stage.pipelineId) {
    throw ValidationFailed.at('/pipelineId', `must be the stage's pipeline (${stage.pipelineId})`);
  }
  if (body.appendedStages && body.appendedStages.length > 0) {
    const errors = checkAddedStages(await stageNamesOf(deps.db, stage.pipelineId), body.appendedStages.map((s) => stageFromInfo(s)), '/appendedStages');
    if (errors.length > 0) throw new ValidationFailed(errors);
  }
  const fenced = fencedAtIntake(caller, stage, body);
  if (fenced) {
    deps.logger.warn(
      { stageId, executionId: body.executionId.slice(0, 100), attempt: body.attempt, workerId: caller.workerId, reason: fenced },
      'result discarded',
    );
    resultsFenced().labels(fenced).inc();
    return { accepted: true, stageId, executionId: body.executionId };
  }
  const span = await startResultSpan(deps.db, { ...stage, applicationId: caller.applicationId }, body, caller.started);
  try {
    await deps.results.publish({
      applicationId: caller.applicationId,
      stageId,
      pipelineId: stage.pipelineId,
      workerId: caller.workerId,
      receivedAt: new Date().toISOString(),
      result: workerFieldsRemoved(body),
      traceparent: span && traceparentOf(span),
    });
  } catch (err) {
    deps.logger.warn({ err, stageId }, 'result not confirmed by the broker');
    if (span) markFailed(span, 'broker_unavailable');
    throw new BrokerUnavailable();
  } finally {
    span?.end();
  }
  resultsAccepted().inc();
  return { accepted: true, stageId, executionId: body.executionId };
}

/**
 * A result the result-consumer would discard (addendum §12), told without a read of its own:
 * - an execution id no dispatch issued (not a UUID, §9) can never be current; such an id need not
 *   even be a valid job id (BullMQ refuses `:`);
 * - an execution whose lease was granted to another worker stays that worker's (a lease is granted
 *   once per execution). Published, its job would take the id `r-{executionId}-{attempt}` that the
 *   holder's own result needs, and the holder's result would be dropped as its duplicate.
 * The worker sees the 202 the spec gives every result of the right shape and owner application.
 */
function fencedAtIntake(caller: ResultCredentials, stage: StageOwner, body: StageResultSubmit): FenceRefusal | null {
  if (!isIssuedExecutionId(body.executionId)) return 'stale_execution';
  const current = stage.current;
  if (current && current.executionId === body.executionId && current.leaseOwner !== null && current.leaseOwner !== caller.workerId) {
    return 'not_lease_holder';
  }
  return null;
}

/**
 * The stage a result names. The credentials' read found it, unless the session came from the cache
 * (decision 0099); then the delivery its ackToken names, held by this process, tells its owner when
 * it is this very execution of this stage and this process granted its lease to the caller's worker
 * (decision 0117: the read is what tells a non-holder's result), and only otherwise is the stage read.
 */
export async function stageOfResult(
  deps: Deps,
  deliveries: Deliveries,
  caller: ResultCredentials,
  stageId: number,
  body: StageResultSubmit,
): Promise<StageOwner | null> {
  if (caller.stage !== undefined) return caller.stage;
  const delivered = body.ackToken === undefined ? undefined : deliveries.heldMessage(body.ackToken);
  if (
    delivered &&
    delivered.stageId === stageId &&
    delivered.executionId === body.executionId &&
    leaseHolders(deps).holder(body.executionId) === caller.workerId
  ) {
    return { applicationId: delivered.applicationId, pipelineId: delivered.pipelineId, spanId: delivered.spanId };
  }
  return readStageOwner(deps, caller, stageId);
}

/**
 * The ack token is a credential for this process only, and the pull a result carries is this
 * request's business (decisions 0098, 0100): neither travels with the result.
 */
function workerFieldsRemoved(body: StageResultSubmit): StageResultSubmit {
  if (body.ackToken === undefined && body.next === undefined) return body;
  const { ackToken: _token, next: _next, ...result } = body;
  return result;
}

/**
 * The ack a result may carry (decision 0098), after its 202 was earned: requeue=false of the
 * delivery `token`, as POST /jobs/ack would. `acked` false when this process does not hold it
 * (expired, acknowledged, another replica's) or the broker failed: the result stays accepted either
 * way, and a delivery not acknowledged returns after the visibility timeout, where fencing discards
 * it. With `next` on the acknowledged delivery's queue, the pull the result carries is made in the
 * same broker call (decision 0110): `taken` is its delivery (null: the queue had none); absent when
 * the pull is to be made as usual.
 */
export async function ackAfterResult(
  deps: Deps,
  deliveries: Deliveries,
  token: string,
  next?: { queue: string; applicationId: number },
): Promise<{ acked: boolean; taken?: Delivery | null }> {
  try {
    if (!next) return { acked: await deliveries.ack(token, false) };
    const { acked, delivery } = await deliveries.ackAndTake(token, next.queue, next.applicationId);
    return delivery === undefined ? { acked } : { acked, taken: delivery };
  } catch (err) {
    deps.logger.warn({ err }, 'ack with a result failed; the delivery returns after the visibility timeout');
    return { acked: false };
  }
}
