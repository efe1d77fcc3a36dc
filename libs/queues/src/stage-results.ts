import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { compile, type StageResultSubmit } from '@po/contracts';

/** Accepted worker results on their way from the worker-gateway to the result-consumer. */
export const STAGE_RESULTS_QUEUE = 'stage-results';

export interface StageResultMessage {
  applicationId: number;
  stageId: number;
  workerId: string;
  receivedAt: string;
  result: StageResultSubmit;
  /** W3C traceparent of the worker-gateway's result span: the apply span is its child. */
  traceparent?: string;
}

export const stageResultMessageSchema = {
  $id: 'StageResultMessage',
  type: 'object',
  required: ['applicationId', 'stageId', 'workerId', 'receivedAt', 'result'],
  properties: {
    applicationId: { type: 'integer', minimum: 1 },
    stageId: { type: 'integer', minimum: 1 },
    workerId: { type: 'string', minLength: 1 },
    receivedAt: { type: 'string' },
    traceparent: { type: 'string', maxLength: 256 },
    result: {
      type: 'object',
      required: ['stageId', 'executionId', 'attempt'],
      properties: {
        stageId: { type: 'integer', minimum: 1 },
        executionId: { type: 'string', minLength: 1 },
        attempt: { type: 'integer', minimum: 1 },
      },
    },
  },
} as const;

const validateStageResultMessage = compile<StageResultMessage>(stageResultMessageSchema, { normalise: false });

const JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 200 },
  removeOnComplete: true,
  removeOnFail: 10_000,
} as const;

export interface StageResultsProducer {
  /** Resolves once Redis confirmed the job: only then may the gateway answer 202. */
  publish(message: StageResultMessage): Promise<void>;
  close(): Promise<void>;
}

export function createStageResultsProducer(connection: Redis, prefix: string): StageResultsProducer {
  const queue = new Queue(STAGE_RESULTS_QUEUE, { connection, prefix, defaultJobOptions: JOB_OPTIONS });
  return {
    async publish(message) {
      await queue.add('result', message);
    },
    close: () => queue.close(),
  };
}

export function createStageResultsConsumer(
  connection: Redis,
  prefix: string,
  apply: (message: StageResultMessage) => Promise<void>,
  options: { concurrency?: number } = {},
): Worker {
  return new Worker(
    STAGE_RESULTS_QUEUE,
    async (job: Job) => {
      const checked = validateStageResultMessage(job.data);
      if (!checked.ok) throw new UnrecoverableError(`invalid stage result message: ${JSON.stringify(checked.errors)}`);
      await apply(checked.value);
    },
    { connection, prefix, concurrency: options.concurrency ?? 16 },
  );
}
