import { BrokerUnavailable, Forbidden, NotFound, Unauthorized, ValidationFailed, checkAddedStages, stageFromInfo } from '@po/domain';
import { resultIntake, sqlOf, stageNamesOf } from '@po/db';
import type { StageResultSubmit } from '@po/contracts';
import { markFailed, rememberSensitiveItems, resultsAccepted, traceparentOf } from '@po/telemetry';
import type { Deps } from '../deps.js';
import type { PendingSession } from '../sessions/auth.js';
import { startResultSpan } from './observe.js';

/**
 * POST /stages/{id}/result (api-spec Behaviour rule 3, addendum §5.2, §13, §15): checks
 * credentials, shape and ownership, then publishes persistently. 202 means Redis confirmed the
 * job, not that it was applied: fencing happens in the result-consumer. The session and the
 * stage's owner are one read (decision 0062).
 */
export async function submitResult(
  deps: Deps,
  auth: { applicationId: number; session: PendingSession },
  stageId: number,
  body: StageResultSubmit,
): Promise<{ accepted: true; stageId: number; executionId: string }> {
  const started = Date.now();
  // The logger censors the values this result marks sensitive from now on.
  if (body.contextItems) rememberSensitiveItems(body.contextItems);
  const intake = await resultIntake(sqlOf(deps.db), { sessionTokenHash: auth.session.tokenHash, stageId });
  if (!intake.session) throw new Unauthorized('Invalid or superseded worker session.');
  if (!intake.session.live) throw new Unauthorized('Worker session expired.');
  auth.session.verified = { workerId: intake.session.workerId, applicationId: intake.session.applicationId };
  if (intake.session.applicationId !== auth.applicationId) {
    throw new Unauthorized('The worker session belongs to another application than the API key.');
  }
  if (body.stageId !== stageId) throw ValidationFailed.at('/stageId', 'must equal the stageId of the route');
  const stage = intake.stage;
  if (!stage) throw new NotFound(`Stage ${stageId} not found.`);
  if (stage.applicationId !== auth.applicationId) throw new Forbidden(`Stage ${stageId} belongs to another application.`);
  if (body.pipelineId !== undefined && body.pipelineId !== null && body.pipelineId !== stage.pipelineId) {
    throw ValidationFailed.at('/pipelineId', `must be the stage's pipeline (${stage.pipelineId})`);
  }
  if (body.appendedStages && body.appendedStages.length > 0) {
    const errors = checkAddedStages(await stageNamesOf(deps.db, stage.pipelineId), body.appendedStages.map(stageFromInfo), '/appendedStages');
    if (errors.length > 0) throw new ValidationFailed(errors);
  }
  const span = await startResultSpan(deps.db, { ...stage, applicationId: auth.applicationId }, body, started);
  try {
    await deps.results.publish({
      applicationId: auth.applicationId,
      stageId,
      pipelineId: stage.pipelineId,
      workerId: intake.session.workerId,
      receivedAt: new Date().toISOString(),
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
