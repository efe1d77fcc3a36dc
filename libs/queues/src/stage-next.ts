import { randomUUID } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { validateStageNextMessage, type StageNextMessage } from '@po/contracts';
import { dropIfSetupFails } from './connection.js';

/**
 * Queues `app_{applicationId}_{handler}_StageNext` (addendum §9): one BullMQ queue per application
 * and handler. The job id is the executionId, so a republish of the same dispatch is a no-op while
 * the job exists, and `messageId` is stable across redeliveries.
 */
export type { StageNextMessage };

/** Pub/sub channel on which a queue name is announced when it gains a message. */
export const stageNextWakeChannel = (prefix: string): string => `${prefix}:stage-next:wake`;

const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: true, attempts: 1 } as const;

export interface StageNextPublisher {
  /** Adds each message to its queue; resolves once Redis confirmed every add. */
  publish(queue: string, messages: StageNextMessage[]): Promise<void>;
  /** The execution ids among `jobs` whose message is not in Redis any more (in no state at all). */
  missing(jobs: readonly { queue: string; executionId: string }[]): Promise<Set<string>>;
  close(): Promise<void>;
}

export function createStageNextPublisher(
  connection: Redis,
  prefix: string,
  options: { onPublished?: (queue: string) => void } = {},
): StageNextPublisher {
  const queues = new Map<string, Queue>();
  const queueFor = (name: string): Queue => {
    let queue = queues.get(name);
    if (!queue) {
      const made = new Queue(name, { connection, prefix, defaultJobOptions: JOB_OPTIONS });
      queue = dropIfSetupFails(made, () => {
        if (queues.get(name) === made) queues.delete(name);
      });
      queues.set(name, queue);
    }
    return queue;
  };
  return {
    async publish(name, messages) {
      if (messages.length === 0) return;
      await queueFor(name).addBulk(messages.map((m) => ({ name: 'stage', data: m, opts: { jobId: m.executionId } })));
      await connection.publish(stageNextWakeChannel(prefix), name);
      options.onPublished?.(name);
    },
    async missing(jobs) {
      if (jobs.length === 0) return new Set();
      const pipeline = connection.pipeline();
      for (const j of jobs) pipeline.exists(queueFor(j.queue).toKey(j.executionId));
      const answers = (await pipeline.exec()) ?? [];
      const gone = new Set<string>();
      jobs.forEach((j, i) => {
        const [err, found] = answers[i] ?? [new Error('no answer'), 0];
        if (!err && found === 0) gone.add(j.executionId);
      });
      return gone;
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}

/** A message fetched for one HTTP delivery, with the BullMQ lock token that owns it. */
export interface FetchedMessage {
  job: Job<StageNextMessage>;
  lockToken: string;
}

export interface StageNextFetcherOptions {
  /** The BullMQ lock lasts the visibility timeout: if this process dies, the lock lapses and any fetcher's stalled check requeues the job. */
  visibilityTimeoutMs: number;
  stalledIntervalMs: number;
  /** A delivery whose lock lapsed was returned to its queue by this process's stalled check (metrics). */
  onStalled?: (queue: string) => void;
}

/**
 * Manual fetching from StageNext queues for the worker-gateway's pull/ack (BullMQ's "manually
 * fetching jobs" pattern): one worker per queue, created on first use, running the stalled-job
 * check that returns deliveries of dead gateways to the queue.
 */
export class StageNextFetcher {
  private readonly workers = new Map<string, Worker<StageNextMessage>>();

  constructor(
    private readonly connection: Redis,
    private readonly prefix: string,
    private readonly options: StageNextFetcherOptions,
  ) {}

  private workerFor(queue: string): Worker<StageNextMessage> {
    let worker = this.workers.get(queue);
    if (!worker) {
      worker = new Worker<StageNextMessage>(queue, null, {
        connection: this.connection,
        prefix: this.prefix,
        autorun: false,
        lockDuration: this.options.visibilityTimeoutMs,
        stalledInterval: this.options.stalledIntervalMs,
        // A delivery may lapse any number of times; lease fencing, not BullMQ, decides execution.
        maxStalledCount: Number.MAX_SAFE_INTEGER,
        skipLockRenewal: true,
      });
      worker.on('error', () => undefined);
      if (this.options.onStalled) worker.on('stalled', () => this.options.onStalled?.(queue));
      void worker.startStalledCheckTimer().catch(() => undefined);
      this.workers.set(queue, worker);
    }
    return worker;
  }

  /** Takes the next message of the queue, or null when it is empty. Never blocks. */
  async fetch(queue: string): Promise<FetchedMessage | null> {
    const lockToken = randomUUID();
    const job = (await this.workerFor(queue).getNextJob(lockToken, { block: false })) as Job<StageNextMessage> | undefined;
    if (!job) return null;
    if (!validateStageNextMessage(job.data).ok) {
      // Not ours to deliver: drop it rather than hand a malformed payload to a worker.
      await job.moveToFailed(new Error('invalid StageNext payload'), lockToken, false);
      return this.fetch(queue);
    }
    return { job, lockToken };
  }

  async complete(message: FetchedMessage): Promise<void> {
    await message.job.moveToCompleted(null, message.lockToken, false);
  }

  /** Puts the same message back, visible at once (ack requeue=true, visibility timeout). */
  async requeue(message: FetchedMessage): Promise<void> {
    await message.job.moveToWait(message.lockToken);
    await this.connection.publish(stageNextWakeChannel(this.prefix), message.job.queueName);
  }

  async close(): Promise<void> {
    await Promise.all([...this.workers.values()].map((w) => w.close()));
    this.workers.clear();
  }
}
