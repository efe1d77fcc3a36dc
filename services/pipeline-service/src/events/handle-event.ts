import type { PipelineEvent } from '@po/queues';
import type { DispatcherDeps } from '../dispatcher/deps.js';
import { dispatchPipeline } from '../dispatcher/dispatch-pipeline.js';

/**
 * Every pipeline event may have made stages ready (creation, append, an applied result, a resume,
 * a due retry) or ended the pipeline (cancel): each is answered with one dispatcher pass.
 */
export function createEventHandler(deps: DispatcherDeps): (event: PipelineEvent) => Promise<void> {
  return async (event) => {
    deps.logger.debug({ event: event.type, pipelineId: event.pipelineId }, 'pipeline event received');
    await dispatchPipeline(deps, event.pipelineId, { skipLocked: false, cause: event.traceparent });
  };
}
