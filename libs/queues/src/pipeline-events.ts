import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { isCluster, reopeningQueue, type RedisConnection } from './connection.js';
import { compile } from '@po/contracts';

/**
 * Announcements of state changes that can make a stage ready; consumed by pipeline-service. The
 * name is its own hash tag: every key of the queue in one cluster slot (decision 0123).
 */
export const PIPELINE_EVENTS_QUEUE = '{pipeline-events}';

/** The queue's 0.5 name, which services of the previous release publish to during a rolling upgrade. */
export const LEGACY_PIPELINE_EVENTS_QUEUE = 'pipeline-events';

export const PIPELINE_EVENT_TYPES = [
  'pipeline.created',
  'pipeline.cancelled',
  'stages.appended',
  'stage.resumed',
  /**
   * Sent by result-consumers before the engine applied results and dispatched in one transaction
   * (decision 0061); still accepted so events queued during an upgrade are handled.
   */
  'result.applied',
  /** a delayed wake-up, e.g. when a retry falls due. */
  'pipeline.wake',
] as const;
export type PipelineEventType = (typeof PIPELINE_EVENT_TYPES)[number];

export interface PipelineEvent {
  type: PipelineEventType;
  applicationId: number;
  pipelineId: number;
  /** Stages concerned: the appended ones, or the resumed one. */
  stageIds?: number[];
  approved?: boolean;
  at: string;
  /** W3C traceparent of the span that caused the event (creation, an applied result): the dispatch span links to it. */
  traceparent?: string;
}

export const pipelineEventSchema = {
  $id: 'PipelineEvent',
  type: 'object',
  required: ['type', 'applicationId', 'pipelineId', 'at'],
  properties: {
    type: { enum: PIPELINE_EVENT_TYPES },
    applicationId: { type: 'integer', minimum: 1 },
    pipelineId: { type: 'integer', minimum: 1 },
    stageIds: { type: 'array', items: { type: 'integer', minimum: 1 } },
    approved: { type: 'boolean' },
    at: { type: 'string', format: 'date-time' },
    traceparent: { type: 'string', maxLength: 256 },
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
  /** Publishes several events in one round trip to Redis (one addBulk), in order. */
  publishMany(events: readonly Omit<PipelineEvent, 'at'>[]): Promise<void>;
  /** Publishes after `delayMs`; one pending wake-up per pipeline and due time. */
  publishDelayed(event: Omit<PipelineEvent, 'at'>, delayMs: number): Promise<void>;
  close(): Promise<void>;
}

export function createPipelineEventsProducer(connection: RedisConnection, prefix: string): PipelineEventsProducer {
  const queue = reopeningQueue(() => new Queue(PIPELINE_EVENTS_QUEUE, { connection, prefix, defaultJobOptions: JOB_OPTIONS }));
  return {
    async publish(event) {
      const payload: PipelineEvent = { ...event, at: new Date().toISOString() };
      await queue.get().add(event.type, payload);
    },
    async publishMany(events) {
      if (events.length === 0) return;
      const at = new Date().toISOString();
      await queue.get().addBulk(events.map((event) => ({ name: event.type, data: { ...event, at } satisfies PipelineEvent })));
    },
    async publishDelayed(event, delayMs) {
      const payload: PipelineEvent = { ...event, at: new Date().toISOString() };
      const due = Date.now() + Math.max(0, delayMs);
      await queue.get().add(event.type, payload, { delay: Math.max(0, delayMs), jobId: `wake-${event.pipelineId}-${due}` });
    },
    close: () => queue.close(),
  };
}

/** The consumer of the queue, and of its 0.5 name unless on a cluster (where its keys span slots). */
export function createPipelineEventsConsumer(
  connection: RedisConnection,
  prefix: string,
  handle: (event: PipelineEvent) => Promise<void>,
  options: { concurrency?: number; legacy?: boolean } = {},
): Worker[] {
  const process = async (job: Job) => {
    const result = validatePipelineEvent(job.data);
    if (!result.ok) {
      // A malformed event can never succeed; retrying it would only delay the ones behind it.
      throw new UnrecoverableError(`invalid pipeline event: ${JSON.stringify(result.errors)}`);
    }
    await handle(result.value);
  };
  const names = (options.legacy ?? !isCluster(connection)) ? [PIPELINE_EVENTS_QUEUE, LEGACY_PIPELINE_EVENTS_QUEUE] : [PIPELINE_EVENTS_QUEUE];
  return names.map((name) => new Worker(name, process, { connection, prefix, concurrency: options.concurrency ?? 8 }));
}
