import { randomUUID } from 'node:crypto';
import { Job, Worker, createRedisBackend, type BackendFactory, type JobJson, type RedisQueueBackend } from 'bullmq';
import { validateStageNextMessage, type StageNextJob } from '@po/contracts';
import { stageNextBullName, stageNextWakeChannel } from './stage-next.js';
import type { RedisConnection } from './connection.js';

/** A message fetched for one HTTP delivery, with the BullMQ lock token that owns it. */
export interface FetchedMessage {
  job: Job<StageNextJob>;
  lockToken: string;
  /** The worker-facing queue name it was fetched from. */
  queue: string;
  /** About the byte length of its stored job data (see stageNextMessageBytes). */
  bytes: number;
}

export interface StageNextFetcherOptions {
  /** The BullMQ lock lasts the visibility timeout: if this process dies, the lock lapses and any fetcher's stalled check requeues the job. */
  visibilityTimeoutMs: number;
  stalledIntervalMs: number;
  /** At most this many queues have a BullMQ worker (and its stalled-check timer) at once. Default 512. */
  maxQueues?: number;
  /** A delivery whose lock lapsed was returned to its queue by this process's stalled check (metrics). */
  onStalled?: (queue: string) => void;
}

/** No queue can be opened: every open one has pulls waiting or deliveries held. */
export class FetchersExhausted extends Error {
  constructor(readonly maxQueues: number) {
    super(`all ${maxQueues} StageNext fetchers are in use`);
  }
}

/**
 * About the byte length of a StageNext job's stored data: its strings (input, context values) are
 * nearly all of it, so they are counted and the fixed fields are a constant. Cheaper than
 * serialising a message of several MB again only to measure it.
 */
export function stageNextMessageBytes(m: StageNextJob): number {
  let bytes = 640 + Buffer.byteLength(m.input) + Buffer.byteLength(m.stageName) + Buffer.byteLength(m.stageHandlerName);
  for (const c of m.pipelineContextItems) bytes += 64 + Buffer.byteLength(c.key) + Buffer.byteLength(c.value ?? '') + Buffer.byteLength(c.valueType ?? '');
  return bytes;
}

const UUID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

/** A §5.1 payload, or one whose context is named by a snapshot id (decision 0121). */
function isStageNextJob(data: StageNextJob): boolean {
  const { contextSnapshotId, ...message } = data;
  if (contextSnapshotId !== undefined && !(typeof contextSnapshotId === 'string' && UUID.test(contextSnapshotId))) return false;
  return validateStageNextMessage(message).ok;
}

/**
 * Fetching only ever asks `getNextJob(…, { block: false })`, which runs on the main connection:
 * without BullMQ's dedicated blocking connection every worker shares the one given here, so the
 * number of queues pulled costs no Redis connections (decision 0081).
 */
const sharedConnectionOnly: BackendFactory<RedisQueueBackend> = (name, opts) => createRedisBackend(name, opts, { withBlockingConnection: false });

interface OpenQueue {
  worker: Worker<StageNextJob>;
  /** Holders that keep it open: callers between acquire and release, fetches under way, messages not yet completed or requeued. */
  users: number;
}

/**
 * Manual fetching from StageNext queues for the worker-gateway's pull/ack (BullMQ's "manually
 * fetching jobs" pattern): one worker per queue, running the stalled-job check that returns
 * deliveries of dead gateways to the queue. At most `maxQueues` are open; opening another closes
 * the least recently used one nobody holds, so a caller looping over queue names cannot grow it.
 */
export class StageNextFetcher {
  /** Least recently used first. */
  private readonly open = new Map<string, OpenQueue>();
  private readonly closing = new Set<Promise<void>>();
  private readonly maxQueues: number;

  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    private readonly options: StageNextFetcherOptions,
  ) {
    this.maxQueues = options.maxQueues ?? 512;
  }

  /** Queues with a BullMQ worker right now. */
  get openQueues(): number {
    return this.open.size;
  }

  /** Keeps the queue open until `release`; false when `maxQueues` queues are open and all are held. */
  acquire(queue: string): boolean {
    const entry = this.entryFor(queue);
    if (!entry) return false;
    entry.users += 1;
    return true;
  }

  release(queue: string): void {
    const entry = this.open.get(queue);
    if (entry && entry.users > 0) entry.users -= 1;
  }

  private entryFor(queue: string): OpenQueue | undefined {
    const found = this.open.get(queue);
    if (found) {
      this.open.delete(queue);
      this.open.set(queue, found);
      return found;
    }
    if (this.open.size >= this.maxQueues && !this.closeOneIdle()) return undefined;
    const entry = { worker: this.makeWorker(queue), users: 0 };
    this.open.set(queue, entry);
    return entry;
  }

  private closeOneIdle(): boolean {
    for (const [name, entry] of this.open) {
      if (entry.users > 0) continue;
      this.open.delete(name);
      const closed = entry.worker.close().catch(() => undefined);
      this.closing.add(closed);
      void closed.finally(() => this.closing.delete(closed));
      return true;
    }
    return false;
  }

  private makeWorker(queue: string): Worker<StageNextJob> {
    const worker = new Worker<StageNextJob>(
      stageNextBullName(queue),
      null,
      {
        connection: this.connection,
        prefix: this.prefix,
        autorun: false,
        lockDuration: this.options.visibilityTimeoutMs,
        stalledInterval: this.options.stalledIntervalMs,
        // A delivery may lapse any number of times; lease fencing, not BullMQ, decides execution.
        maxStalledCount: Number.MAX_SAFE_INTEGER,
        skipLockRenewal: true,
      },
      sharedConnectionOnly,
    );
    worker.on('error', () => undefined);
    worker.on('stalled', () => {
      this.options.onStalled?.(queue);
      // Pulls waiting on any gateway learn of it now rather than at their next safety poll.
      void this.connection.publish(stageNextWakeChannel(this.prefix), queue).catch(() => undefined);
    });
    void worker.startStalledCheckTimer().catch(() => undefined);
    return worker;
  }

  /**
   * Takes the next message of the queue, or null when it is empty. Never blocks. A message keeps
   * its queue open until it is completed or requeued. Throws FetchersExhausted when the queue is
   * not open and cannot be.
   */
  async fetch(queue: string): Promise<FetchedMessage | null> {
    const entry = this.entryFor(queue);
    if (!entry) throw new FetchersExhausted(this.maxQueues);
    entry.users += 1;
    let message: FetchedMessage | null = null;
    try {
      for (;;) {
        const lockToken = randomUUID();
        const job = (await entry.worker.getNextJob(lockToken, { block: false })) as Job<StageNextJob> | undefined;
        if (!job) return null;
        message = await this.deliverable(job, lockToken, queue);
        if (message) return message;
      }
    } finally {
      if (!message) entry.users -= 1;
    }
  }

  /** The fetched job as a message to deliver; a malformed payload is failed instead (null). */
  private async deliverable(job: Job<StageNextJob>, lockToken: string, queue: string): Promise<FetchedMessage | null> {
    if (isStageNextJob(job.data)) return { job, lockToken, queue, bytes: stageNextMessageBytes(job.data) };
    // Not ours to deliver: drop it rather than hand a malformed payload to a worker.
    await job.moveToFailed(new Error('invalid StageNext payload'), lockToken, false);
    return null;
  }

  async complete(message: FetchedMessage): Promise<void> {
    try {
      await message.job.moveToCompleted(null, message.lockToken, false);
    } finally {
      this.release(message.queue);
    }
  }

  /**
   * Completes the message and takes the next one of its queue in the same BullMQ script (a worker's
   * "fetch next" on completion): one broker call where complete and fetch take two. The next message
   * is locked under the same lock token and keeps the queue open in its place; null when the queue
   * had none to give.
   */
  async completeAndFetch(message: FetchedMessage): Promise<FetchedMessage | null> {
    const entry = this.open.get(message.queue);
    let next: FetchedMessage | null = null;
    try {
      const fetched = await message.job.moveToCompleted(null, message.lockToken, true);
      const [data, id] = Array.isArray(fetched) ? (fetched as [JobJson | null | undefined, string | undefined]) : [];
      if (!data || !entry) return null;
      const job = Job.fromJSON(entry.worker, data, id) as Job<StageNextJob>;
      job.token = message.lockToken;
      next = await this.deliverable(job, message.lockToken, message.queue);
      return next;
    } finally {
      if (!next) this.release(message.queue);
    }
  }

  /** Puts the same message back, visible at once (ack requeue=true, visibility timeout). */
  async requeue(message: FetchedMessage): Promise<void> {
    try {
      await message.job.moveToWait(message.lockToken);
    } finally {
      this.release(message.queue);
    }
    await this.connection.publish(stageNextWakeChannel(this.prefix), message.queue);
  }

  async close(): Promise<void> {
    const workers = [...this.open.values()].map((e) => e.worker);
    this.open.clear();
    await Promise.all([...workers.map((w) => w.close()), ...this.closing]);
  }
}
