import { randomUUID } from 'node:crypto';
import { Job, Queue, QueueKeys, Worker, createRedisBackend, type BackendFactory, type JobJson, type RedisQueueBackend } from 'bullmq';
import type { StageNextJob } from '@po/contracts';
import {
  STAGE_NEXT_BATCH_JOB,
  STAGE_NEXT_JOB,
  STAGE_NEXT_JOB_OPTIONS,
  stageNextBatchKeys,
  stageNextBullName,
  stageNextMessageBytes,
  stageNextWakeChannel,
  type StageNextBatchJob,
  stageNextJobPriority,
} from './stage-next.js';
import type { RedisConnection } from './connection.js';
import { StageNextPlaces } from './stage-next-places.js';
import { isStageNextJob, lostLock, settle, unsettle, type Carrier, type FetchedMessage } from './fetched-message.js';

export type { FetchedMessage } from './fetched-message.js';

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
 * Fetching only ever asks `getNextJob(…, { block: false })`, which runs on the main connection:
 * without BullMQ's dedicated blocking connection every worker shares the one given here, so the
 * number of queues pulled costs no Redis connections (decision 0081).
 */
const sharedConnectionOnly: BackendFactory<RedisQueueBackend> = (name, opts) => createRedisBackend(name, opts, { withBlockingConnection: false });

/**
 * How long a message of a batch waits in the fetcher for a pull to take it before it goes back to
 * its queue as a job of its own, where any gateway's pull finds it.
 */
const BUFFERED_MS = 1000;

/** How long the `batched` fields of acked messages wait to be removed together (see settleMessage). */
const FORGET_AFTER_MS = 250;

interface OpenQueue {
  worker: Worker<StageNextJob | StageNextBatchJob>;
  /** For requeuing one message of a batch as a job of its own; made when first needed. */
  queue: Queue | undefined;
  /**
   * Holders that keep it open: callers between acquire and release, fetches under way, and each
   * message not yet completed or requeued (delivered or buffered).
   */
  users: number;
  /** Messages of a fetched batch that no fetch took yet, oldest first. */
  buffer: FetchedMessage[];
  /** The Redis fetch under way: fetches of the same queue wait for it and take from the buffer after. */
  fetching: Promise<unknown> | undefined;
  /** Whether the queue has places (see `limited`), when that was last read, and the first read. */
  limited: boolean;
  limitReadAt: number;
  limitKnown: Promise<void>;
}

/** How long a queue's global concurrency, as read from Redis, is trusted before it is read again. */
const LIMIT_READ_MS = 2000;

/**
 * Manual fetching from StageNext queues for the worker-gateway's pull/ack (BullMQ's "manually
 * fetching jobs" pattern): one worker per queue, running the stalled-job check that returns
 * deliveries of dead gateways to the queue. At most `maxQueues` are open; opening another closes
 * the least recently used one nobody holds, so a caller looping over queue names cannot grow it.
 *
 * A batch job is split here: its first message goes to the fetch that found it, the others wait in
 * a per-queue buffer for the next fetches (a second at most, then each goes back as a job of its
 * own). Each message is acked or requeued on its own; the batch job is completed once all are
 * settled. If this process dies, the batch's lock lapses and the batch comes back; a settled
 * message gave up its `batched` field, so the fetcher that takes it delivers only the others.
 */
export class StageNextFetcher {
  /** Least recently used first. */
  private readonly open = new Map<string, OpenQueue>();
  private readonly closing = new Set<Promise<void>>();
  private readonly maxQueues: number;
  private readonly keys: QueueKeys;
  private readonly places: StageNextPlaces;

  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    private readonly options: StageNextFetcherOptions,
  ) {
    this.maxQueues = options.maxQueues ?? 512;
    this.keys = new QueueKeys(prefix);
    this.places = new StageNextPlaces(connection, prefix);
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
    const entry: OpenQueue = {
      worker: this.makeWorker(queue),
      queue: undefined,
      users: 0,
      buffer: [],
      fetching: undefined,
      limited: false,
      limitReadAt: 0,
      limitKnown: Promise.resolve(),
    };
    entry.limitKnown = this.readLimit(queue, entry);
    this.open.set(queue, entry);
    return entry;
  }

  /** Resolves once the queue's limit was first read (a fetch for a pull waits for it: no first round unlimited). */
  async limitKnown(queue: string): Promise<void> {
    await this.open.get(queue)?.limitKnown;
  }

  /**
   * Whether the queue has places (a handler's maxConcurrent, decision 0132), as last read from
   * Redis (again in the background once LIMIT_READ_MS old): a pull must take a place before its
   * fetch, and whoever gives one back hands it on. False for a queue not open here.
   */
  limited(queue: string): boolean {
    const entry = this.open.get(queue);
    if (!entry) return false;
    if (Date.now() - entry.limitReadAt > LIMIT_READ_MS) void this.readLimit(queue, entry);
    return entry.limited;
  }

  /** Reads the queue's limit now (its places' limit changed); resolves when known. */
  async refreshLimit(queue: string): Promise<void> {
    const entry = this.open.get(queue);
    if (entry) await this.readLimit(queue, entry);
  }

  /** Reads whether the queue has places into its entry; a failed read keeps the last answer. */
  private async readLimit(queue: string, entry: OpenQueue): Promise<void> {
    entry.limitReadAt = Date.now();
    try {
      entry.limited = await this.places.limited(queue);
    } catch {
      // Read again on the next call after LIMIT_READ_MS.
    }
  }

  /** How many of `ids` got a place of the queue (StageNextPlaces.take), lapsing with the visibility timeout. */
  takePlaces(queue: string, ids: readonly string[]): Promise<number> {
    const now = Date.now();
    return this.places.take(queue, ids, now, now + this.options.visibilityTimeoutMs);
  }

  releasePlaces(queue: string, ids: readonly string[]): void {
    this.places.release(queue, ids);
  }

  /** A place handed on to a delivery fetched now lapses with it; answers when that is. */
  renewPlace(queue: string, id: string): number {
    const lapsesAt = Date.now() + this.options.visibilityTimeoutMs;
    this.places.renew(queue, id, lapsesAt);
    return lapsesAt;
  }

  private closeOneIdle(): boolean {
    for (const [name, entry] of this.open) {
      if (entry.users > 0) continue;
      this.open.delete(name);
      const closed = Promise.all([entry.worker.close(), entry.queue?.close()]).then(() => undefined, () => undefined);
      this.closing.add(closed);
      void closed.finally(() => this.closing.delete(closed));
      return true;
    }
    return false;
  }

  private makeWorker(queue: string): Worker<StageNextJob | StageNextBatchJob> {
    const worker = new Worker<StageNextJob | StageNextBatchJob>(
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
   *
   * A message left of a batch comes first, without asking Redis. Fetches of one queue sent together
   * ask Redis one at a time: the first may bring a batch that serves the others.
   */
  async fetch(queue: string): Promise<FetchedMessage | null> {
    const entry = this.entryFor(queue);
    if (!entry) throw new FetchersExhausted(this.maxQueues);
    entry.users += 1;
    try {
      for (;;) {
        const buffered = entry.buffer.shift();
        if (buffered) return buffered;
        if (entry.fetching) {
          // It found the queue empty: so does this one.
          if ((await entry.fetching) === null) return null;
          continue;
        }
        const fetching = this.fetchFromRedis(queue, entry);
        entry.fetching = fetching.catch(() => undefined);
        try {
          return await fetching;
        } finally {
          entry.fetching = undefined;
        }
      }
    } finally {
      entry.users -= 1;
    }
  }

  private async fetchFromRedis(queue: string, entry: OpenQueue): Promise<FetchedMessage | null> {
    for (;;) {
      const lockToken = randomUUID();
      const fetchedAt = Date.now();
      const job = (await entry.worker.getNextJob(lockToken, { block: false })) as Job<StageNextJob | StageNextBatchJob> | undefined;
      if (!job) return null;
      const message = await this.unpack(entry, queue, job, lockToken, fetchedAt);
      if (message) return message;
    }
  }

  /**
   * The fetched job's first message to deliver; a batch's others go to the buffer. Each message
   * keeps the queue open. A malformed payload is not delivered: a single one is failed, a malformed
   * message of a batch is settled without delivery (null when nothing is left to deliver).
   */
  private async unpack(entry: OpenQueue, queue: string, job: Job<StageNextJob | StageNextBatchJob>, lockToken: string, fetchedAt: number): Promise<FetchedMessage | null> {
    const message = (carrier: Carrier, data: StageNextJob): FetchedMessage => {
      entry.users += 1;
      return { id: data.executionId, data, lockToken, queue, bytes: stageNextMessageBytes(data), fetchedAt, carrier };
    };
    if (job.name !== STAGE_NEXT_BATCH_JOB) {
      const data = job.data as StageNextJob;
      if (isStageNextJob(data)) return message({ job, lockToken }, data);
      // Not ours to deliver: drop it rather than hand a malformed payload to a worker.
      await job.moveToFailed(new Error('invalid StageNext payload'), lockToken, false);
      return null;
    }
    const inner: unknown[] = Array.isArray((job.data as StageNextBatchJob).batch) ? (job.data as StageNextBatchJob).batch : [];
    const { batched, sizes } = stageNextBatchKeys(this.keys, queue);
    // It no longer waits: the depth gauges stop counting its messages (see readStageNextDepths).
    void this.connection.hdel(sizes, String(job.id)).catch(() => undefined);
    const valid = inner.filter((m): m is StageNextJob => isStageNextJob(m as StageNextJob));
    const ids = inner.flatMap((m) => (typeof (m as StageNextJob)?.executionId === 'string' ? [(m as StageNextJob).executionId] : []));
    if (valid.length === 0) {
      await job.moveToFailed(new Error('invalid StageNext payload'), lockToken, false);
      if (ids.length > 0) void this.connection.hdel(batched, ...ids).catch(() => undefined);
      return null;
    }
    // A batch the stalled check returned (its gateway died) still carries the messages that gateway
    // had settled: only those whose `batched` field still names this batch are delivered again.
    let pending = valid;
    if (job.stalledCounter > 0) {
      const owners = await this.connection.hmget(batched, ...valid.map((m) => m.executionId));
      pending = valid.filter((_, i) => owners[i] === String(job.id));
    }
    if (pending.length === 0) {
      await job.moveToCompleted(null, lockToken, false);
      if (ids.length > 0) void this.connection.hdel(batched, ...ids).catch(() => undefined);
      return null;
    }
    const carrier: Carrier = { job, lockToken, batch: { ids, unsettled: pending.length } };
    const [first, ...rest] = pending.map((data) => message(carrier, data));
    entry.buffer.push(...rest);
    return first!;
  }

  /**
   * Settles a message (see `settle`). A message of a batch that is not its last also gives up its
   * `batched` field, so a batch redelivered after its gateway died does not deliver it again: at
   * once for a requeue, and for acks gathered over FORGET_AFTER_MS in one `HDEL` — which a batch
   * completed meanwhile (the usual case at load) makes unnecessary, its completion removing every
   * field. Not waited for: if that write is lost with the gateway, the message comes again and its
   * lease refuses it.
   */
  private settleMessage(message: FetchedMessage, how: 'ack' | 'requeue'): boolean {
    const last = settle(message);
    const batch = message.carrier.batch;
    if (last || !batch) return last;
    if (how === 'requeue') {
      void this.connection.hdel(stageNextBatchKeys(this.keys, message.queue).batched, message.id).catch(() => undefined);
    } else {
      (batch.forget ??= []).push(message.id);
      batch.forgetTimer ??= setTimeout(() => this.forgetSettled(message.queue, batch), FORGET_AFTER_MS);
    }
    return last;
  }

  private forgetSettled(queue: string, batch: NonNullable<Carrier['batch']>): void {
    clearTimeout(batch.forgetTimer);
    batch.forgetTimer = undefined;
    const ids = batch.forget?.splice(0) ?? [];
    if (ids.length > 0) void this.connection.hdel(stageNextBatchKeys(this.keys, queue).batched, ...ids).catch(() => undefined);
  }

  /**
   * Completes the job (with BullMQ's fetch-next when asked): `next` is what BullMQ fetched. A
   * batch's `batched` fields go with it. A batch whose lock lapsed is not ours any more (`lost`):
   * the stalled check gave it back, its messages come again, and the lease refuses the stale ones;
   * that is not an error here.
   */
  private async completeJob(message: FetchedMessage, fetchNext: boolean): Promise<{ next?: unknown; lost?: true }> {
    const { job, lockToken, batch } = message.carrier;
    try {
      const next = await job.moveToCompleted(null, lockToken, fetchNext);
      if (batch) {
        // Every field goes now, the acked ones waiting for FORGET_AFTER_MS too.
        clearTimeout(batch.forgetTimer);
        batch.forget = undefined;
        void this.connection.hdel(stageNextBatchKeys(this.keys, message.queue).batched, ...batch.ids).catch(() => undefined);
      }
      return { next };
    } catch (err) {
      if (batch && lostLock(err)) {
        // It comes back: its fetcher must see which messages were acked here.
        this.forgetSettled(message.queue, batch);
        return { lost: true };
      }
      throw err;
    }
  }

  /**
   * Acks the message. If Redis does not answer, the message is unsettled again: the caller may keep
   * holding it and ack it once more (it then acquires its queue again, as `release` ran here).
   */
  async complete(message: FetchedMessage): Promise<void> {
    try {
      await this.settleAndComplete(message, 'ack');
    } finally {
      this.release(message.queue);
    }
  }

  /** Settles the message and completes its job if that was the last one; unsettles it if Redis fails. */
  private async settleAndComplete(message: FetchedMessage, how: 'ack' | 'requeue'): Promise<void> {
    if (!this.settleMessage(message, how)) return;
    try {
      await this.completeJob(message, false);
    } catch (err) {
      unsettle(message);
      throw err;
    }
  }

  /**
   * Completes the message and takes the next one of its queue: a message left of a batch if there
   * is one; else, when this completes its job, in the same BullMQ script (a worker's "fetch next" on
   * completion), one broker call where complete and fetch take two. The next message is locked under
   * the same lock token and keeps the queue open in its place; null when the queue had none to give.
   */
  async completeAndFetch(message: FetchedMessage): Promise<FetchedMessage | null> {
    const entry = this.open.get(message.queue);
    try {
      const last = this.settleMessage(message, 'ack');
      if (!entry) {
        if (last) await this.completeJob(message, false);
        return null;
      }
      if (!last || entry.buffer.length > 0) {
        if (last) await this.completeJob(message, false);
        return await this.fetch(message.queue);
      }
      const fetchedAt = Date.now();
      const { next, lost } = await this.completeJob(message, true);
      if (lost) return await this.fetch(message.queue);
      const [data, id] = Array.isArray(next) ? (next as [JobJson | null | undefined, string | undefined]) : [];
      if (!data) return null;
      const job = Job.fromJSON(entry.worker, data, id) as Job<StageNextJob | StageNextBatchJob>;
      job.token = message.lockToken;
      // A malformed next one is dropped; the queue may hold more.
      return (await this.unpack(entry, message.queue, job, message.lockToken, fetchedAt)) ?? (await this.fetch(message.queue));
    } finally {
      this.release(message.queue);
    }
  }

  /**
   * Puts the message back, visible at once (ack requeue=true, visibility timeout). A single goes
   * back as it is; a message of a batch is added as a job of its own (job id = executionId) and
   * settled in its batch. If that add fails the batch is never completed: its lock lapses and the
   * stalled check returns all of it.
   */
  async requeue(message: FetchedMessage): Promise<void> {
    try {
      if (!message.carrier.batch) await message.carrier.job.moveToWait(message.lockToken);
      else {
        // With its batch's priority (decision 0132): a job without one would go before every other.
        const priority = message.carrier.job.priority || stageNextJobPriority(message.data);
        await this.queueOf(message.queue).add(STAGE_NEXT_JOB, message.data, { jobId: message.id, priority });
        // Added again, it is settled; a retry after a failed completion adds nothing (same job id).
        await this.settleAndComplete(message, 'requeue');
      }
    } finally {
      this.release(message.queue);
    }
    await this.connection.publish(stageNextWakeChannel(this.prefix), message.queue);
  }

  private queueOf(queue: string): Queue {
    // A message not yet settled keeps its queue open.
    const entry = this.open.get(queue);
    if (!entry) throw new Error(`StageNext queue ${queue} is not open`);
    if (!entry.queue) {
      entry.queue = new Queue(stageNextBullName(queue), { connection: this.connection, prefix: this.prefix, defaultJobOptions: STAGE_NEXT_JOB_OPTIONS });
      entry.queue.on('error', () => undefined);
    }
    return entry.queue;
  }

  /**
   * Requeues each message of a batch that waited in the buffer `olderThanMs` or longer (from its
   * fetch) without a pull taking it; every one with 0 (shutdown). Resolves with how many went back.
   */
  async sweepBuffered(olderThanMs = BUFFERED_MS): Promise<number> {
    const now = Date.now();
    const due: FetchedMessage[] = [];
    for (const entry of this.open.values()) {
      const stale = entry.buffer.filter((m) => now - m.fetchedAt >= olderThanMs);
      if (stale.length === 0) continue;
      entry.buffer = entry.buffer.filter((m) => !stale.includes(m));
      due.push(...stale);
    }
    const results = await Promise.allSettled(due.map((m) => this.requeue(m)));
    // Pulls waiting on any gateway learn of them now rather than at their next safety poll (one
    // holding free places of a limited queue may have found it empty while they waited here).
    for (const queue of new Set(due.map((m) => m.queue))) void this.connection.publish(stageNextWakeChannel(this.prefix), queue).catch(() => undefined);
    return results.filter((r) => r.status === 'fulfilled').length;
  }

  async close(): Promise<void> {
    await this.sweepBuffered(0);
    const entries = [...this.open.values()];
    this.open.clear();
    await Promise.all([...entries.flatMap((e) => [e.worker.close(), e.queue?.close()]), ...this.closing]);
  }
}
