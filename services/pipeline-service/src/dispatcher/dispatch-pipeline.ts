import { randomUUID } from 'node:crypto';
import { derivePipelineStatus, isTerminalPipeline, planDispatch, type StageNode, type StageStatus } from '@po/domain';
import {
  countActiveStages,
  finishDispatchPass,
  liveContextForDispatch,
  lockApplicationSlots,
  lockPipelineForDispatch,
  markPublished,
  markStages,
  startExecutions,
  stagesForDispatch,
} from '@po/db';
import { rememberSensitiveItems } from '@po/telemetry';
import type { DispatcherDeps } from './deps.js';
import { byQueue, stageNextMessage } from './messages.js';
import { recordPublished, startDispatchSpans } from './observe.js';

export type PassOutcome = 'dispatched' | 'busy' | 'missing';

/**
 * One dispatcher pass over a pipeline (addendum §9): under the pipeline's row lock it marks doomed
 * stages Skipped, moves ready stages to Pending with a new execution (or Throttled at the cap),
 * re-dispatches due retries and derives the pipeline status. Messages are published after commit;
 * an execution whose publish is not confirmed is republished by the sweeper. `cause` is the
 * traceparent of the event that asked for the pass (tracing: the dispatch spans link to it).
 */
export async function dispatchPipeline(
  deps: DispatcherDeps,
  pipelineId: number,
  options: { skipLocked: boolean; cause?: string },
): Promise<PassOutcome> {
  const now = deps.clock();
  const pass = await deps.db.$transaction(async (tx) => {
    const pipeline = await lockPipelineForDispatch(tx, pipelineId, options.skipLocked);
    if (!pipeline) return null;
    if (isTerminalPipeline(pipeline.status)) {
      await finishDispatchPass(tx, pipelineId, { status: pipeline.status, nextPassAt: null });
      return { applicationId: pipeline.applicationId, outgoing: [], nextPassAt: null, traceId: pipeline.traceId, requestedAt: null };
    }
    const stages = await stagesForDispatch(tx, pipelineId);
    let slots: number | null = null;
    if (deps.maxActiveStages > 0) {
      await lockApplicationSlots(tx, pipeline.applicationId);
      slots = Math.max(0, deps.maxActiveStages - (await countActiveStages(tx, pipeline.applicationId)));
    }
    const nodes: StageNode[] = stages.map((s) => ({
      id: s.id,
      position: s.position,
      name: s.name,
      status: s.status,
      runNextIfFailed: s.options.runNextIfFailed,
      dependsOn: s.options.dependsOn,
      nextRetryAt: s.nextRetryAt,
    }));
    const plan = planDispatch(nodes, now, slots);
    const executions = plan.dispatch.map((stageId) => ({ stageId, executionId: randomUUID() }));
    await markStages(tx, plan.skip, 'Skipped', now);
    await markStages(tx, plan.throttle, 'Throttled', now);
    await startExecutions(tx, pipeline.applicationId, executions, now);

    const after = new Map<number, StageStatus>();
    for (const id of plan.skip) after.set(id, 'Skipped');
    for (const id of plan.throttle) after.set(id, 'Throttled');
    for (const id of plan.dispatch) after.set(id, 'Pending');
    const statuses = stages.map((s) => after.get(s.id) ?? s.status);
    const status = derivePipelineStatus({ current: pipeline.status, dispatched: true, stageStatuses: statuses });
    const futureRetries = stages
      .filter((s, i) => statuses[i] === 'RetryScheduled' && s.nextRetryAt)
      .map((s) => s.nextRetryAt!.getTime());
    const nextPassAt = futureRetries.length > 0 ? new Date(Math.min(...futureRetries)) : null;
    await finishDispatchPass(tx, pipelineId, { status, finishedAt: isTerminalPipeline(status) ? now : null, nextPassAt });

    if (executions.length === 0) return { applicationId: pipeline.applicationId, outgoing: [], nextPassAt, traceId: pipeline.traceId, requestedAt: null };
    const context = await liveContextForDispatch(tx, pipelineId);
    rememberSensitiveItems(context);
    const byId = new Map(stages.map((s) => [s.id, s]));
    const outgoing = executions.map((e) =>
      stageNextMessage({
        applicationId: pipeline.applicationId,
        pipelineId,
        traceId: pipeline.traceId,
        stage: byId.get(e.stageId)!,
        executionId: e.executionId,
        context,
        dispatchedAt: now,
      }),
    );
    return { applicationId: pipeline.applicationId, outgoing, nextPassAt, traceId: pipeline.traceId, requestedAt: pipeline.dispatchRequestedAt };
  });
  if (!pass) return options.skipLocked ? 'busy' : 'missing';

  const spans = startDispatchSpans(pass.outgoing, pass.traceId, options.cause, now.getTime());
  for (const [queue, messages] of byQueue(pass.outgoing)) {
    await deps.publisher.publish(queue, messages);
    recordPublished(messages, pass.requestedAt, spans);
    await markPublished(deps.db, messages.map((m) => m.executionId), deps.clock());
  }
  if (pass.nextPassAt) {
    await deps.events.publishDelayed(
      { type: 'pipeline.wake', applicationId: pass.applicationId, pipelineId },
      pass.nextPassAt.getTime() - deps.clock().getTime(),
    );
  }
  return 'dispatched';
}
