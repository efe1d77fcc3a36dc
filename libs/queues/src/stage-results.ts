import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { reopeningQueue } from './connection.js';
import { compile, type StageResultSubmit } from '@po/contracts';

/** Accepted worker results on their way from the worker-gateway to the result-consumer. */
export const STAGE_RESULTS_QUEUE = 'stage-results';

export interface StageResultMessage {
  applicationId: number;
  stageId: number;
  /** The stage's pipeline, as the worker-gateway read it (messages queued by older gateways lack it). */
  pipelineId?: number;
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
    pipelineId: { type: 'integer', minimum: 1 },
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

/**
 * A result that got 202 is never dropped because applying it failed for a while (a database
 * outage, a long restart): it is retried without limit, the delay growing to RETRY_MAX_DELAY_MS.
 * Only a malformed message fails for good (UnrecoverableError), and it is kept for inspection.
 */
const RETRY_MAX_DELAY_MS = 30_000;
const JOB_OPTIONS = {
  attempts: Number.MAX_SAFE_INTEGER,
  backoff: { type: 'capped-exponential', delay: 200 },
  removeOnComplete: true,
  removeOnFail: 10_000,
} as const;

/** The delay before retry `attemptsMade` of a result job: 200 ms doubling, at most RETRY_MAX_DELAY_MS. */
export function resultRetryDelay(attemptsMade: number): number {
  return Math.min(RETRY_MAX_DELAY_MS, 200 * 2 ** Math.min(20, Math.max(0, attemptsMade - 1)));
}

/**
 * The result job of one execution attempt: a repeated post of the same result while one is queued
 * adds nothing. (BullMQ refuses `:` in custom ids.)
 */
export function resultJobId(executionId: string, attempt: number): string {
  return `r-${executionId}-${attempt}`;
}

export interface StageResultsProducer {
  /** Resolves once Redis confirmed the job: only then may the gateway answer 202. */
  publish(message: StageResultMessage): Promise<void>;
  /**
   * The executions among `results` whose result for that attempt waits on the queue to be applied
   * (or is being applied): the receipt of a 202 that the sweeper honours (decision 0062).
   */
  waiting(results: readonly { executionId: string; attempt: number }[]): Promise<Set<string>>;
  close(): Promise<void>;
}

export function createStageResultsProducer(connection: Redis, prefix: string): StageResultsProducer {
  const queue = reopeningQueue(() => new Queue(STAGE_RESULTS_QUEUE, { connection, prefix, defaultJobOptions: JOB_OPTIONS }));
  return {
    async publish(message) {
      await queue.get().add('result', message, { jobId: resultJobId(message.result.executionId, message.result.attempt) });
    },
    async waiting(results) {
      const found = new Set<string>();
      if (results.length === 0) return found;
      const ids = results.map((r) => resultJobId(r.executionId, r.attempt));
      const pipeline = connection.pipeline();
      for (const id of ids) pipeline.exists(queue.get().toKey(id));
      const answers = (await pipeline.exec()) ?? [];
      // A job that exists may still have failed for good (malformed): only pending ones count.
      await Promise.all(
        results.map(async (r, i) => {
          const [err, exists] = answers[i] ?? [null, 0];
          if (err || exists === 0) return;
          const state = await queue.get().getJobState(ids[i]!);
          if (state !== 'failed' && state !== 'completed' && state !== 'unknown') found.add(r.executionId);
        }),
      );
      return found;
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
    {
      connection,
      prefix,
      concurrency: options.concurrency ?? 64,
      // A consumer killed mid-batch (or cut from Redis) leaves its jobs active: their lock lapses
      // within 10 s and the stalled check returns them within 5 s more, as often as that happens.
      // Meanwhile the execution's receipt keeps the sweeper from expiring it (decision 0062).
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      lockDuration: 10_000,
      stalledInterval: 5_000,
      settings: { backoffStrategy: resultRetryDelay },
    },
  );
}
