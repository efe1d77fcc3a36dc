import { Queue, QueueKeys } from 'bullmq';
import { stageNextBullName } from './stage-next.js';
import type { RedisConnection } from './connection.js';

/**
 * A paused handler's StageNext queue is paused in Redis too (decision 0132), so messages published
 * before the pause are not delivered either. PostgreSQL (`handler_settings.paused`) is the truth:
 * the api-gateway applies a change after its commit, and pipeline-service's sweeper compares
 * `stageNextPausedStates` with it and applies the difference, so a lost pause is corrected.
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
 * Whether each named StageNext queue is paused, in the order given: one HEXISTS of the queue's
 * `meta` hash each (what BullMQ's `isPaused` reads), all sent at once. Each key carries its queue's
 * hash tag, so on a cluster each goes to its own slot's node.
 */
export async function stageNextPausedStates(connection: RedisConnection, prefix: string, queues: readonly string[]): Promise<boolean[]> {
  const keys = new QueueKeys(prefix);
  return Promise.all(queues.map(async (queue) => (await connection.hexists(keys.toKey(stageNextBullName(queue), 'meta'), 'paused')) === 1));
}
