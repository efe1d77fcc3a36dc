import type { PipelineEvent } from '@po/queues';
import type { Logger } from '@po/telemetry';

/**
 * Reacts to a pipeline event. Until the dispatcher lands (execution-engine issue) the service only
 * records what it received, which proves the api-gateway's announcements arrive.
 */
export function createEventHandler(logger: Logger): (event: PipelineEvent) => Promise<void> {
  return async (event) => {
    logger.info(
      {
        event: event.type,
        applicationId: event.applicationId,
        pipelineId: event.pipelineId,
        stageIds: event.stageIds,
        approved: event.approved,
      },
      'pipeline event received',
    );
  };
}
