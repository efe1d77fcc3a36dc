import { randomUUID } from 'node:crypto';
import { Queue, QueueKeys } from 'bullmq';
import type { StageNextJob, StageNextMessage } from '@po/contracts';
import { dropIfSetupFails, type RedisConnection } from './connection.js';

/**
 * Queues `app_{applicationId}_{handler}_StageNext` (addendum §9): one BullMQ queue per application
 * and handler. A lone message is a job whose id is the executionId, so a republish of the same
 * dispatch is a no-op while the job exists, and `messageId` (the executionId) is stable across
 * redeliveries. Several dispatched to one queue at once are one batch job (STAGE_NEXT_BATCH_JOB).
 *
 * Callers always speak the worker-facing name (pull requests and responses, wake-ups, metrics);
 * only this library turns it into the BullMQ name (`stageNextBullName`).
 */
export type { StageNextJob, StageNextMessage };

/** Pub/sub channel on which a queue's worker-facing name is announced when it gains a message. */
export const stageNextWakeChannel = (prefix: string): string => `${prefix}:stage-next:wake`;

/** Pub/sub channel naming a StageNext queue whose places' limit changed (decision 0132): gateways read it again at once. */
export const stageNextLimitChannel = (prefix: string): string => `${prefix}:stage-next:limit`;

/**
 * The BullMQ queue behind a worker-facing StageNext queue name. BullMQ refuses `:` (its key
 * separator) and a handler may contain any character (decision 0081), so `%` and `:` are
 * percent-encoded, and so are the braces: the whole name is the queue's hash tag (`{…}`), which
 * keeps every key of one queue in one Redis Cluster slot while different queues — different
 * applications and handlers — spread over the slots (decision 0123). The mapping cannot collide.
 */
export function stageNextBullName(queue: string): string {
  return `{${queue.replace(/[%:{}]/g, (c) => ENCODED[c]!)}}`;
}

const ENCODED: Record<string, string> = { '%': '%25', ':': '%3A', '{': '%7B', '}': '%7D' };

export const STAGE_NEXT_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 1,
} as const;

/** The BullMQ job name of one message (job id = executionId). */
export const STAGE_NEXT_JOB = 'stage';

/**
 * The BullMQ job name of several messages dispatched to one queue together (data `{ batch }`, job
 * id `b-<uuid>`): one add, one fetch and one completion for all of them (decision 0125's next
 * step). The gateway's fetcher splits it and settles each message on its own.
 */
export const STAGE_NEXT_BATCH_JOB = 'batch';

/** The most messages in one batch job: a gateway holds a batch until every message is settled. */
export const STAGE_NEXT_BATCH_MAX = 32;

export interface StageNextBatchJob {
  batch: StageNextJob[];
}

/**
 * `{queue}:batched`: executionId → the batch job carrying it, so `missing()` still answers per
 * message. `{queue}:batch-sizes`: batch job id → its message count while it waits (removed when a
 * gateway fetches it), so the depth gauges count messages. Both carry the queue's hash tag.
 */
export const stageNextBatchKeys = (keys: QueueKeys, queue: string) => ({
  batched: keys.toKey(stageNextBullName(queue), 'batched'),
  sizes: keys.toKey(stageNextBullName(queue), 'batch-sizes'),
});

/**
 * About the byte length of a StageNext job's stored data: its strings (input, context values) are
 * nearly all of it, so they are counted and the fixed fields are a constant. Cheaper than
 * serialising a message of several MB again only to measure it.
 */
export function stageNextMessageBytes(m: StageNextJob): number {
  let bytes =
    640 +
    Buffer.byteLength(m.input) +
    Buffer.byteLength(m.stageName) +
    Buffer.byteLength(m.stageHandlerName);
  for (const c of m.pipelineContextItems)
    bytes +=
      64 +
      Buffer.byteLength(c.key) +
      Buffer.byteLength(c.value ?? '') +
      Buffer.byteLength(c.valueType ?? '');
  return bytes;
}

/** About the most bytes of messages one batch job carries: a gateway keeps a batch's messages in memory until pulls take them. */
const STAGE_NEXT_BATCH_MAX_BYTES = 1 << 20;

/**
 * `messages` in chunks of about STAGE_NEXT_BATCH_MAX_BYTES at most (a message too large to share
 * one is a chunk of its own), each split into as few chunks of at most STAGE_NEXT_BATCH_MAX as can
 * be, of about equal count. A chunk of one is published as a single job.
 */
function chunks(messages: readonly StageNextJob[]): StageNextJob[][] {
  const byBytes: StageNextJob[][] = [];
  let current: StageNextJob[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = stageNextMessageBytes(m);
    if (current.length > 0 && bytes + size > STAGE_NEXT_BATCH_MAX_BYTES) {
      byBytes.push(current);
      current = [];
      bytes = 0;
    }
    current.push(m);
    bytes += size;
  }
  if (current.length > 0) byBytes.push(current);
  return byBytes.flatMap((group) => {
    const count = Math.ceil(group.length / STAGE_NEXT_BATCH_MAX);
    return Array.from({ length: count }, (_, i) =>
      group.slice(
        Math.round((i * group.length) / count),
        Math.round(((i + 1) * group.length) / count),
      ),
    );
  });
}

/** Publisher queues kept open at once: each costs listeners on the shared connection. */
const MAX_OPEN_QUEUES = 1000;

/** Turns beyond this share the last value: at most 2^18 distinct ones per priority. */
const TURNS = 2 ** 18;

/**
 * Keys take turns in a queue by this many messages: a key's dispatches of one pass share a turn,
 * so they can go as one batch job (decision 0127) instead of one job each (decision 0132).
 */
export const STAGE_NEXT_TURN_SPAN = 8;

/**
 * The BullMQ priority of a StageNext job (decision 0132): its stage's priority (1..5, lower first),
 * then its key's turn (the key's load when it was admitted, by STAGE_NEXT_TURN_SPAN). BullMQ pops
 * the lowest value first and keeps FIFO among equal values, so every job carries one: a job
 * without would go before all of them.
 */
export function stageNextJobPriority(m: StageNextJob, turn = 0): number {
  const priority = Math.min(5, Math.max(1, Math.trunc(m.options.priority ?? 3)));
  return priority * TURNS + Math.min(TURNS - 1, Math.floor(Math.max(0, turn) / STAGE_NEXT_TURN_SPAN));
}

export interface StageNextPublisher {
  /**
   * Adds the messages to their queue; resolves once Redis confirmed every add. Two or more go as
   * batch jobs unless `batch: false`, which adds one job per message with job id = executionId
   * (the lost-message walk relies on that id: a message there after all is not added twice).
   */
  publish(queue: string, messages: StageNextJob[], options?: { batch?: boolean; turns?: ReadonlyMap<string, number> }): Promise<void>;
  /**
   * The execution ids among `jobs` whose message is not in Redis any more (in no state at all):
   * neither its own job nor the batch job `{queue}:batched` names for it exists.
   */
  missing(jobs: readonly { queue: string; executionId: string }[]): Promise<Set<string>>;
  close(): Promise<void>;
}

export function createStageNextPublisher(
  connection: RedisConnection,
  prefix: string,
  options: { onPublished?: (queue: string) => void; maxOpenQueues?: number } = {},
): StageNextPublisher {
  const maxOpen = options.maxOpenQueues ?? MAX_OPEN_QUEUES;
  // Least recently used first; a queue with a publish under way is never closed under it.
  const queues = new Map<string, { queue: Queue; busy: number }>();
  const keys = new QueueKeys(prefix);
  const open = (name: string) => {
    let entry = queues.get(name);
    if (entry) {
      queues.delete(name);
      queues.set(name, entry);
      return entry;
    }
    const made = new Queue(stageNextBullName(name), {
      connection,
      prefix,
      defaultJobOptions: STAGE_NEXT_JOB_OPTIONS,
    });
    const dropBroken = () => {
      if (queues.get(name)?.queue === made) queues.delete(name);
    };
    entry = { queue: dropIfSetupFails(made, dropBroken), busy: 0 };
    queues.set(name, entry);
    for (const [old, e] of queues) {
      if (queues.size <= maxOpen) break;
      if (e.busy > 0) continue;
      queues.delete(old);
      void e.queue.close().catch(() => undefined);
    }
    return entry;
  };
  /**
   * One batch job and its two hash fields in one round trip on one connection. The hashes are
   * written first (commands go out in call order), so a gateway that fetches the batch at once
   * removes a size field that is already there. A failed add takes its fields back; a field whose
   * batch does not exist only makes `missing()` call its messages lost, never present.
   */
  const addBatch = async (queue: Queue, name: string, chunk: StageNextJob[], priority: number): Promise<void> => {
    const batchId = `b-${randomUUID()}`;
    const { batched, sizes } = stageNextBatchKeys(keys, name);
    const data: StageNextBatchJob = { batch: chunk };
    const [mapped, sized, added] = await Promise.allSettled([
      connection.hset(batched, Object.fromEntries(chunk.map((m) => [m.executionId, batchId]))),
      connection.hset(sizes, batchId, chunk.length),
      queue.add(STAGE_NEXT_BATCH_JOB, data, { jobId: batchId, priority }),
    ]);
    if (added.status === 'rejected') {
      void connection.hdel(batched, ...chunk.map((m) => m.executionId)).catch(() => undefined);
      void connection.hdel(sizes, batchId).catch(() => undefined);
      throw added.reason;
    }
    for (const r of [mapped, sized]) if (r.status === 'rejected') throw r.reason;
  };
  return {
    async publish(name, messages, publishOptions = {}) {
      if (messages.length === 0) return;
      const entry = open(name);
      entry.busy += 1;
      try {
        // One message (every dispatch at light load) goes by `add`: addBulk builds an ioredis
        // pipeline, which copies every BullMQ script onto itself — twice the CPU for the same call.
        const priorityOf = (m: StageNextJob) => stageNextJobPriority(m, publishOptions.turns?.get(m.executionId));
        const [only] = messages;
        if (messages.length === 1 && only)
          await entry.queue.add(STAGE_NEXT_JOB, only, { jobId: only.executionId, priority: priorityOf(only) });
        else if (publishOptions.batch === false)
          await entry.queue.addBulk(
            messages.map((m) => ({
              name: STAGE_NEXT_JOB,
              data: m,
              opts: { jobId: m.executionId, priority: priorityOf(m) },
            })),
          );
        else {
          // A batch job has one priority: messages are batched with those of the same value only.
          const byPriority = new Map<number, StageNextJob[]>();
          for (const m of messages) {
            const p = priorityOf(m);
            const list = byPriority.get(p);
            if (list) list.push(m);
            else byPriority.set(p, [m]);
          }
          await Promise.all(
            [...byPriority].flatMap(([priority, group]) =>
              chunks(group).map((chunk) =>
                chunk.length === 1
                  ? entry.queue.add(STAGE_NEXT_JOB, chunk[0]!, { jobId: chunk[0]!.executionId, priority })
                  : addBatch(entry.queue, name, chunk, priority),
              ),
            ),
          );
        }
      } finally {
        entry.busy -= 1;
      }
      // The wake-up is a hint (a gateway's safety poll covers a lost one): its reply is not waited
      // for, which keeps a round trip off every dispatch and out of the creation's transaction.
      void connection.publish(stageNextWakeChannel(prefix), name).catch(() => undefined);
      options.onPublished?.(name);
    },
    async missing(jobs) {
      const gone = new Set<string>();
      if (jobs.length === 0) return gone;
      // One pipeline per queue: a queue's keys share a cluster slot, different queues' do not.
      const byQueue = new Map<string, string[]>();
      for (const j of jobs) byQueue.set(j.queue, [...(byQueue.get(j.queue) ?? []), j.executionId]);
      await Promise.all(
        [...byQueue].map(async ([queue, ids]) => {
          const bull = stageNextBullName(queue);
          const pipeline = connection.pipeline();
          for (const id of ids) pipeline.exists(keys.toKey(bull, id));
          pipeline.hmget(stageNextBatchKeys(keys, queue).batched, ...ids);
          const answers = (await pipeline.exec()) ?? [];
          const [hashErr, named] = answers[ids.length] ?? [new Error('no answer'), null];
          // A message without a job of its own is there if the batch job named for it is. An
          // unanswered read counts as present: the walk asks again at its next page.
          if (hashErr) return;
          const carriers = named as (string | null)[];
          const inBatch = new Map<string, string[]>();
          ids.forEach((id, i) => {
            const [err, found] = answers[i] ?? [new Error('no answer'), 0];
            if (err || found !== 0) return;
            const batchId = carriers[i];
            if (batchId) inBatch.set(batchId, [...(inBatch.get(batchId) ?? []), id]);
            else gone.add(id);
          });
          if (inBatch.size === 0) return;
          const batches = [...inBatch.keys()];
          const check = connection.pipeline();
          for (const b of batches) check.exists(keys.toKey(bull, b));
          const found = (await check.exec()) ?? [];
          batches.forEach((b, i) => {
            const [err, exists] = found[i] ?? [new Error('no answer'), 0];
            if (!err && exists === 0) for (const id of inBatch.get(b)!) gone.add(id);
          });
        }),
      );
      return gone;
    },
    async close() {
      const all = [...queues.values()];
      queues.clear();
      await Promise.all(all.map((e) => e.queue.close()));
    },
  };
}
