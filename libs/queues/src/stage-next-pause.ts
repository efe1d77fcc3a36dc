import { Queue, QueueKeys } from 'bullmq';
import { stageNextBullName, stageNextLimitChannel } from './stage-next.js';
import { stageNextPlaceKeys } from './stage-next-places.js';
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
 * Sets (or with null removes) one StageNext queue's number of places (`StageNextPlaces`), and
 * tells every worker-gateway (stageNextLimitChannel), which would otherwise see it at its next
 * periodic read. Resolves once Redis applied it; idempotent.
 */
export async function setStageNextConcurrency(connection: RedisConnection, prefix: string, queue: string, concurrency: number | null): Promise<void> {
  const { limit } = stageNextPlaceKeys(new QueueKeys(prefix), queue);
  if (concurrency === null) await connection.del(limit);
  else await connection.set(limit, concurrency);
  await connection.publish(stageNextLimitChannel(prefix), queue);
}

export interface StageNextQueueState {
  paused: boolean;
  /** The number of places; null: no limit. */
  concurrency: number | null;
}

/**
 * Each named StageNext queue's pause and number of places, in the order given: the `paused` field
 * of the queue's `meta` hash (what BullMQ's `isPaused` reads) and its places' limit, all sent at
 * once. Each key carries its queue's hash tag, so on a cluster each goes to its own slot's node.
 */
export async function stageNextQueueStates(connection: RedisConnection, prefix: string, queues: readonly string[]): Promise<StageNextQueueState[]> {
  const keys = new QueueKeys(prefix);
  return Promise.all(
    queues.map(async (queue) => {
      const [paused, limit] = await Promise.all([
        connection.hexists(keys.toKey(stageNextBullName(queue), 'meta'), 'paused'),
        connection.get(stageNextPlaceKeys(keys, queue).limit),
      ]);
      return { paused: paused === 1, concurrency: limit === null ? null : Number(limit) };
    }),
  );
}
