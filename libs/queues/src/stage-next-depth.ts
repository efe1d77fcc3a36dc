import { QueueKeys } from 'bullmq';
import { stageNextBatchKeys, stageNextBullName } from './stage-next.js';
import type { RedisConnection } from './connection.js';

export interface StageNextDepth {
  /** The worker-facing queue name, `app_{applicationId}_{handler}_StageNext`. */
  queue: string;
  /** Messages no gateway has fetched yet (in BullMQ wait, paused and prioritized jobs; a batch job counts its messages). */
  waiting: number;
  delayed: number;
  /** Age of the oldest waiting message (since it was added: its dispatch); null when none waits. */
  oldestWaitingAgeMs: number | null;
}

/**
 * Depth of the named StageNext queues, read on demand (the dashboard's overview) in two pipelined
 * round trips per queue, all queues at once, without opening a BullMQ Queue per name. One pipeline
 * per queue, since each queue's keys share a cluster slot and different queues' do not. Waiting
 * counts messages: a batch job counts as the messages it carries (batchedExtra). The keys
 * are BullMQ's own (QueueKeys): its wait list takes new jobs at the head (LPUSH), so the oldest
 * waiting job is the last element; prioritized jobs wait in a sorted set, first to go first. The integration test publishes through createStageNextPublisher
 * and reads it back (services/api-gateway overview.int.test.ts), so a change of BullMQ's layout fails there.
 */
export async function readStageNextDepths(connection: RedisConnection, prefix: string, queues: readonly string[], now = Date.now()): Promise<StageNextDepth[]> {
  const keys = new QueueKeys(prefix);
  return Promise.all(queues.map((queue) => readDepth(connection, keys, queue, now)));
}

/**
 * What waiting batch jobs add to a count of jobs to make it a count of messages: `{queue}:batch-sizes`
 * holds one field per batch job that waits (written with it, removed by the gateway that fetches it),
 * so messages = jobs − fields + the sum of the sizes. A batch the stalled check returned to its queue
 * has no field any more and counts as one message, not n: that undercount lasts until it is fetched
 * again, and only follows a gateway that died holding it.
 */
export function batchedExtra(fields: number, sizes: unknown): number {
  const total = Array.isArray(sizes) ? sizes.reduce((n: number, v) => n + (Number(v) || 0), 0) : 0;
  return Math.max(0, total - fields);
}

async function readDepth(connection: RedisConnection, keys: QueueKeys, queue: string, now: number): Promise<StageNextDepth> {
  const key = (type: string) => keys.toKey(stageNextBullName(queue), type);
  const { sizes } = stageNextBatchKeys(keys, queue);
  const answers =
    (await connection.pipeline().llen(key('wait')).llen(key('paused')).zcard(key('prioritized')).zcard(key('delayed')).lindex(key('wait'), -1).hlen(sizes).hvals(sizes).zrange(key('prioritized'), 0, 0).exec()) ?? [];
  const value = (i: number): unknown => {
    const [err, v] = answers[i] ?? [new Error('no answer'), null];
    if (err) throw err;
    return v;
  };
  const jobs = Number(value(0)) + Number(value(1)) + Number(value(2));
  const waiting = jobs > 0 ? jobs + batchedExtra(Number(value(5)), value(6)) : 0;
  const delayed = Number(value(3));
  // StageNext jobs are prioritized (decision 0132): FIFO within a priority, so the next job to go is
  // the oldest of the first priority that waits. Jobs of older releases are in the wait list.
  const oldestId = value(4) ?? (value(7) as string[] | null)?.[0];
  // BullMQ 5 left "0:…" markers in the wait list; they are not jobs.
  if (waiting === 0 || typeof oldestId !== 'string' || oldestId.startsWith('0:')) return { queue, waiting, delayed, oldestWaitingAgeMs: null };
  const stamp = Number(await connection.hget(key(oldestId), 'timestamp'));
  return { queue, waiting, delayed, oldestWaitingAgeMs: Number.isFinite(stamp) && stamp > 0 ? Math.max(0, now - stamp) : null };
}
