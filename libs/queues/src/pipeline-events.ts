import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { compile } from '@po/contracts';

/** Announcements of state changes that can make a stage ready; consumed by pipeline-service. */
export const PIPELINE_EVENTS_QUEUE = 'pipeline-events';

export type PipelineEventType = 'pipeline.created' | 'pipeline.cancelled' | 'stages.appended' | 'stage.resumed';

export interface PipelineEvent {
  type: PipelineEventType;
  applicationId: number;
  pipelineId: number;
  /** Stages concerned: the appended ones, or the resumed one. */
  stageIds?: number[];
  approved?: boolean;
  at: string;
}

export const pipelineEventSchema = {
  $id: 'PipelineEvent',
  type: 'object',
  required: ['type', 'applicationId', 'pipelineId', 'at'],
  properties: {
    type: { enum: ['pipeline.created', 'pipeline.cancelled', 'stages.appended', 'stage.resumed'] },
    applicationId: { type: 'integer', minimum: 1 },
    pipelineId: { type: 'integer', minimum: 1 },
    stageIds: { type: 'array', items: { type: 'integer', minimum: 1 } },
    approved: { type: 'boolean' },
    at: { type: 'string', format: 'date-time' },
  },
} as const;

const validatePipelineEvent = compile<PipelineEvent>(pipelineEventSchema);

const JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 200 },
  removeOnComplete: true,
  removeOnFail: 1000,
} as const;

export interface PipelineEventsProducer {
  publish(event: Omit<PipelineEvent, 'at'>): Promise<void>;
  close(): Promise<void>;
}

export function createPipelineEventsProducer(connection: Redis, prefix: string): PipelineEventsProducer {
  const queue = new Queue(PIPELINE_EVENTS_QUEUE, { connection, prefix, defaultJobOptions: JOB_OPTIONS });
  return {
    async publish(event) {
      const payload: PipelineEvent = { ...event, at: new Date().toISOString() };
      await queue.add(event.type, payload);
    },
    close: () => queue.close(),
  };
}

export function createPipelineEventsConsumer(
  connection: Redis,
  prefix: string,
  handle: (event: PipelineEvent) => Promise<void>,
  options: { concurrency?: number } = {},
): Worker {
  return new Worker(
    PIPELINE_EVENTS_QUEUE,
    async (job: Job) => {
      const result = validatePipelineEvent(job.data);
      if (!result.ok) {
        // A malformed event can never succeed; retrying it would only delay the ones behind it.
        throw new UnrecoverableError(`invalid pipeline event: ${JSON.stringify(result.errors)}`);
      }
      await handle(result.value);
    },
    { connection, prefix, concurrency: options.concurrency ?? 8 },
  );
}
