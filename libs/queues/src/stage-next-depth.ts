import { QueueKeys } from 'bullmq';
import { stageNextBullName } from './stage-next.js';
import type { RedisConnection } from './connection.js';

export interface StageNextDepth {
  /** The worker-facing queue name, `app_{applicationId}_{handler}_StageNext`. */
  queue: string;
  /** Messages no gateway has fetched yet (BullMQ wait, paused and prioritized). */
  waiting: number;
  delayed: number;
  /** Age of the oldest waiting message (since it was added: its dispatch); null when none waits. */
  oldestWaitingAgeMs: number | null;
}

/**
 * Depth of the named StageNext queues, read on demand (the dashboard's overview) in two pipelined
 * round trips whatever their number, without opening a BullMQ Queue per name. The keys are
 * BullMQ's own (QueueKeys): its wait list takes new jobs at the head (LPUSH), so the oldest waiting
 * job is the last element. The integration test publishes through createStageNextPublisher and
 * reads it back (services/api-gateway overview.int.test.ts), so a change of BullMQ's layout fails there.
 */
export async function readStageNextDepths(connection: RedisConnection, prefix: string, queues: readonly string[], now = Date.now()): Promise<StageNextDepth[]> {
  if (queues.length === 0) return [];
  const keys = new QueueKeys(prefix);
  const key = (queue: string, type: string) => keys.toKey(stageNextBullName(queue), type);
  const counts = connection.pipeline();
  for (const q of queues) {
    counts.llen(key(q, 'wait')).llen(key(q, 'paused')).zcard(key(q, 'prioritized')).zcard(key(q, 'delayed')).lindex(key(q, 'wait'), -1);
  }
  const answers = (await counts.exec()) ?? [];
  const value = (i: number): unknown => {
    const [err, v] = answers[i] ?? [new Error('no answer'), null];
    if (err) throw err;
    return v;
  };
  const partial = queues.map((queue, n) => {
    const at = n * 5;
    const oldestId = value(at + 4);
    return {
      queue,
      waiting: Number(value(at)) + Number(value(at + 1)) + Number(value(at + 2)),
      delayed: Number(value(at + 3)),
      // BullMQ 5 left "0:…" markers in the wait list; they are not jobs.
      oldestId: typeof oldestId === 'string' && !oldestId.startsWith('0:') ? oldestId : null,
    };
  });
  const stamps = connection.pipeline();
  const asked = partial.filter((p) => p.oldestId !== null);
  for (const p of asked) stamps.hget(key(p.queue, p.oldestId!), 'timestamp');
  const created = asked.length === 0 ? [] : ((await stamps.exec()) ?? []);
  const ages = new Map(asked.map((p, i) => {
    const stamp = Number(created[i]?.[1]);
    return [p.queue, Number.isFinite(stamp) && stamp > 0 ? Math.max(0, now - stamp) : null] as const;
  }));
  return partial.map(({ queue, waiting, delayed }) => ({ queue, waiting, delayed, oldestWaitingAgeMs: waiting > 0 ? (ages.get(queue) ?? null) : null }));
}
