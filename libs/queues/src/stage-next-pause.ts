import { Queue, QueueKeys } from 'bullmq';
import { stageNextBullName } from './stage-next.js';
import type { RedisConnection } from './connection.js';

/**
 * A handler's settings that act on its StageNext queue in Redis (decision 0132): a paused handler's
 * queue is paused too, so messages published before the pause are not delivered either, and its
 * `maxConcurrent` is the queue's BullMQ global concurrency, the most messages delivered and not yet
 * acknowledged at once across every gateway. PostgreSQL (`handler_settings`) is the truth: the
 * api-gateway applies a change after its commit, and pipeline-service's sweeper compares
 * `stageNextQueueStates` with it and applies the difference, so a lost change is corrected.
 *
 * Both speak the worker-facing name (`app_{applicationId}_{handler}_StageNext`), like every caller
 * of this library; the BullMQ name and its hash tag are `stageNextBullName`'s.
 */

/**
 * Pauses or resumes one StageNext queue with BullMQ's own pause/resume (its `meta` hash field
 * `paused`; waiting jobs move to and from the paused list), on the publisher's connection and prefix.
 * Resolves once Redis applied it; idempotent.
 */
export async function setStageNextPaused(connection: RedisConnection, prefix: string, queue: string, paused: boolean): Promise<void> {
  const bull = new Queue(stageNextBullName(queue), { connection, prefix });
  // The shared connection's errors reach every queue on it; the call below reports its own.
  bull.on('error', () => undefined);
  try {
    if (paused) await bull.pause();
    else await bull.resume();
  } finally {
    await bull.close().catch(() => undefined);
  }
}

/**
 * Sets (or with null removes) one StageNext queue's BullMQ global concurrency: BullMQ's own fetch
 * scripts then move no job to active while that many are active, whichever gateway asks.
 * Resolves once Redis applied it; idempotent.
 */
export async function setStageNextConcurrency(connection: RedisConnection, prefix: string, queue: string, concurrency: number | null): Promise<void> {
  const bull = new Queue(stageNextBullName(queue), { connection, prefix });
  bull.on('error', () => undefined);
  try {
    if (concurrency === null) await bull.removeGlobalConcurrency();
    else await bull.setGlobalConcurrency(concurrency);
  } finally {
    await bull.close().catch(() => undefined);
  }
}

export interface StageNextQueueState {
  paused: boolean;
  /** The global concurrency; null: none. */
  concurrency: number | null;
}

/**
 * Each named StageNext queue's pause and global concurrency, in the order given: one HMGET of the
 * queue's `meta` hash each (the fields BullMQ's scripts read), all sent at once. Each key carries
 * its queue's hash tag, so on a cluster each goes to its own slot's node.
 */
export async function stageNextQueueStates(connection: RedisConnection, prefix: string, queues: readonly string[]): Promise<StageNextQueueState[]> {
  const keys = new QueueKeys(prefix);
  return Promise.all(
    queues.map(async (queue) => {
      const [paused, concurrency] = await connection.hmget(keys.toKey(stageNextBullName(queue), 'meta'), 'paused', 'concurrency');
      return { paused: paused !== null, concurrency: concurrency === null ? null : Number(concurrency) };
    }),
  );
}
