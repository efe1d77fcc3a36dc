import { stageQueueName, type HandlerSettingsRequest, type HandlerView } from '@po/contracts';
import { findHandler, upsertHandlerSettings, type HandlerSettingsValues } from '@po/db';
import { announce, type Deps } from '../deps.js';
import { handlerView } from './view.js';

/** Whether a limit allows more after the change than before: raised, or cleared (null: none). */
const raised = (before: number | null, after: number | null): boolean => before !== null && (after === null || after > before);

/** Whether the change can admit stages that waited before it: a resume, a limit raised or cleared. */
export function loosens(before: HandlerSettingsValues, after: HandlerSettingsValues): boolean {
  return (before.paused && !after.paused) || raised(before.maxConcurrent, after.maxConcurrent) || raised(before.maxPerSecond, after.maxPerSecond);
}

/**
 * PUT /handlers/{name} (decision 0132): creates or changes the handler's settings and answers its
 * view, both in one transaction. After the commit, best effort (the sweeper reconciles both):
 * a `paused` or `maxConcurrent` given is applied to the handler's StageNext queue in Redis (its
 * pause, its global concurrency: where a handler's limit is enforced), and a loosening change
 * wakes the pipeline of the handler's oldest Throttled stage, whose pass admits what now may go.
 */
export async function updateHandler(deps: Deps, applicationId: number, name: string, body: HandlerSettingsRequest): Promise<HandlerView> {
  const { change, handler } = await deps.sql.transaction(async (tx) => {
    const change = await upsertHandlerSettings(tx, applicationId, name, body);
    const handler = await findHandler(tx, applicationId, name);
    if (!handler) throw new Error(`handler ${name} has settings but was not read back`);
    return { change, handler };
  });
  const queue = stageQueueName(applicationId, name);
  if (body.paused !== undefined) {
    try {
      await deps.setQueuePaused(queue, change.after.paused);
    } catch (err) {
      deps.logger.warn({ err, queue, paused: change.after.paused }, 'handler queue pause not applied; the sweep will');
    }
  }
  if (body.maxConcurrent !== undefined) {
    try {
      await deps.setQueueConcurrency(queue, change.after.maxConcurrent);
    } catch (err) {
      deps.logger.warn({ err, queue, maxConcurrent: change.after.maxConcurrent }, 'handler queue concurrency not applied; the sweep will');
    }
  }
  const pipelineId = handler.oldestThrottledPipelineId;
  if (pipelineId !== null && loosens(change.before, change.after)) await announce(deps, { type: 'pipeline.wake', applicationId, pipelineId });
  return handlerView(handler);
}
