import type { Batcher } from '@po/db';
import type { ItemOutcome, PassRequest } from '@po/engine';
import type { PipelineEvent } from '@po/queues';
import type { Logger } from '@po/telemetry';

/**
 * Every pipeline event may have made stages ready (creation, append, a resume, a due retry) or
 * ended the pipeline (cancel): each is answered with a dispatcher pass, batched with the passes
 * other events asked for meanwhile.
 */
export function createEventHandler(passes: Batcher<PassRequest, ItemOutcome>, logger: Logger): (event: PipelineEvent) => Promise<void> {
  return async (event) => {
    logger.debug({ event: event.type, pipelineId: event.pipelineId }, 'pipeline event received');
    await passes.submit({ pipelineId: event.pipelineId, cause: event.traceparent });
  };
}
