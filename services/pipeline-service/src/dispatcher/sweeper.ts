import { expiredExecutions, liveContextForDispatch, markPublished, pipelinesDueForDispatch, pipelinesWithThrottledStages, stageForMessage, unpublishedExecutions } from '@po/db';
import type { StageOptions } from '@po/domain';
import type { DispatcherDeps } from './deps.js';
import { dispatchPipeline } from './dispatch-pipeline.js';
import { expireExecution } from './expire-execution.js';
import { stageNextMessage } from './messages.js';

const BATCH = 200;

export interface SweeperOptions {
  intervalMs: number;
  /** A requested pass this old was not handled through its event: the sweep takes it. */
  eventGraceMs: number;
}

/**
 * The safety net of addendum §9 and the clock of §11: expires leases and handler timeouts,
 * runs passes whose event was lost or whose retry fell due, frees Throttled stages and
 * republishes messages whose publish was never confirmed. Replicas skip rows another holds.
 */
export async function sweepOnce(deps: DispatcherDeps, options: SweeperOptions): Promise<void> {
  const now = deps.clock();
  for (const target of await expiredExecutions(deps.db, now, BATCH)) {
    const pipelineId = await expireExecution(deps, target);
    if (pipelineId !== null) await dispatchPipeline(deps, pipelineId, { skipLocked: false });
  }
  const due = await pipelinesDueForDispatch(deps.db, new Date(now.getTime() - options.eventGraceMs), BATCH);
  const throttled = deps.maxActiveStages > 0 ? await pipelinesWithThrottledStages(deps.db, BATCH) : [];
  for (const pipelineId of new Set([...due, ...throttled])) {
    await dispatchPipeline(deps, pipelineId, { skipLocked: true });
  }
  for (const target of await unpublishedExecutions(deps.db, new Date(now.getTime() - 2000), BATCH)) {
    await republish(deps, target.executionId, target.stageId);
  }
}

async function republish(deps: DispatcherDeps, executionId: string, stageId: number): Promise<void> {
  const stage = await stageForMessage(deps.db, stageId);
  if (!stage || stage.currentExecutionId !== executionId || stage.status !== 'Pending') return;
  const context = await liveContextForDispatch(deps.db, Number(stage.pipelineId));
  const { queue, message } = stageNextMessage({
    applicationId: stage.applicationId,
    pipelineId: Number(stage.pipelineId),
    traceId: stage.pipeline.traceId,
    stage: { ...stage, id: Number(stage.id), options: stage.options as unknown as StageOptions },
    executionId,
    context,
    dispatchedAt: deps.clock(),
  });
  await deps.publisher.publish(queue, [message]);
  await markPublished(deps.db, [executionId], deps.clock());
  deps.logger.info({ executionId, stageId }, 'republished an unconfirmed StageNext message');
}

/** Runs sweepOnce every interval until stopped; a failing sweep is logged and retried next tick. */
export function startSweeper(deps: DispatcherDeps, options: SweeperOptions): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    running = sweepOnce(deps, options)
      .catch((err: unknown) => deps.logger.error({ err }, 'sweep failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };
  timer = setTimeout(tick, options.intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
