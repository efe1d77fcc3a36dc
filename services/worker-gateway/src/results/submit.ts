import { BrokerUnavailable, Forbidden, NotFound, Unauthorized, ValidationFailed, checkAddedStages, stageFromInfo } from '@po/domain';
import { stageForResult } from '@po/db';
import type { StageResultSubmit } from '@po/contracts';
import { markFailed, rememberSensitiveItems, resultsAccepted, traceparentOf } from '@po/telemetry';
import type { Deps } from '../deps.js';
import type { SessionState } from '../sessions/auth.js';
import { startResultSpan } from './observe.js';

/**
 * POST /stages/{id}/result (api-spec Behaviour rule 3, addendum §5.2, §13, §15): checks
 * credentials, shape and ownership, then publishes persistently. 202 means Redis confirmed the
 * job, not that it was applied: fencing happens in the result-consumer.
 */
export async function submitResult(
  deps: Deps,
  auth: { applicationId: number; session: SessionState },
  stageId: number,
  body: StageResultSubmit,
): Promise<{ accepted: true; stageId: number; executionId: string }> {
  const started = Date.now();
  // The logger censors the values this result marks sensitive from now on.
  if (body.contextItems) rememberSensitiveItems(body.contextItems);
  if (auth.session.applicationId !== auth.applicationId) {
    throw new Unauthorized('The worker session belongs to another application than the API key.');
  }
  if (body.stageId !== stageId) throw ValidationFailed.at('/stageId', 'must equal the stageId of the route');
  const stage = await stageForResult(deps.db, stageId, { withStageNames: (body.appendedStages?.length ?? 0) > 0 });
  if (!stage) throw new NotFound(`Stage ${stageId} not found.`);
  if (stage.applicationId !== auth.applicationId) throw new Forbidden(`Stage ${stageId} belongs to another application.`);
  if (body.pipelineId !== undefined && body.pipelineId !== null && body.pipelineId !== stage.pipelineId) {
    throw ValidationFailed.at('/pipelineId', `must be the stage's pipeline (${stage.pipelineId})`);
  }
  if (body.appendedStages && body.appendedStages.length > 0) {
    const errors = checkAddedStages(stage.stageNames, body.appendedStages.map(stageFromInfo), '/appendedStages');
    if (errors.length > 0) throw new ValidationFailed(errors);
  }
  const span = await startResultSpan(deps.db, stage, body, started);
  try {
    await deps.results.publish({
      applicationId: auth.applicationId,
      stageId,
      workerId: auth.session.workerId,
      receivedAt: deps.clock().toISOString(),
      result: body,
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
