import { Queue, QueueKeys } from 'bullmq';
import { dropIfSetupFails, type RedisConnection } from './connection.js';
import { toJobCounts } from './queue-backlog.js';
import { batchedExtra } from './stage-next-depth.js';
import { stageNextBatchKeys, stageNextBullName } from './stage-next.js';

export interface StageNextQueueSample {
  queue: string;
  /** Messages waiting: a waiting batch job counts the messages it carries. */
  waiting: number;
  /** Jobs fetched and not yet completed (a batch job is one). */
  active: number;
  delayed: number;
  /** Age of the oldest waiting message (from its creation, i.e. its dispatch), 0 when none waits. */
  oldestAgeSeconds: number;
}

export interface StageNextQueueStats {
  /** A message was published to (or fetched from) this queue: watch it for a while. */
  note(queue: string): void;
  /** Reads every watched queue: BullMQ job counts plus the oldest waiting job's timestamp. */
  read(): Promise<StageNextQueueSample[]>;
  close(): Promise<void>;
}

export interface StageNextQueueStatsOptions {
  /** How long a queue stays watched after it was last noted while it is empty. Default 15 minutes. */
  idleMs?: number;
  /** At most this many queues are watched; the least recently noted go first. Default 500. */
  maxQueues?: number;
  now?: () => number;
}

/**
 * Depth and age of the StageNext queues this process published to recently, for the metrics
 * gauges read on scrape. Only recently seen queues are read, so a scrape costs a few Redis calls
 * per active queue, never a SCAN of the keyspace. A queue that still holds messages stays watched.
 */
export function createStageNextQueueStats(connection: RedisConnection, prefix: string, options: StageNextQueueStatsOptions = {}): StageNextQueueStats {
  const idleMs = options.idleMs ?? 15 * 60_000;
  const maxQueues = options.maxQueues ?? 500;
  const now = options.now ?? Date.now;
  const watched = new Map<string, { lastSeen: number; queue: Queue }>();
  const keys = new QueueKeys(prefix);

  const forget = (name: string) => {
    const entry = watched.get(name);
    watched.delete(name);
    void entry?.queue.close().catch(() => undefined);
  };

  return {
    note(name) {
      const entry = watched.get(name);
      if (entry) {
        watched.delete(name);
        entry.lastSeen = now();
        watched.set(name, entry);
        return;
      }
      const queue = dropIfSetupFails(new Queue(stageNextBullName(name), { connection, prefix }), () => {
        if (watched.get(name)?.queue === queue) watched.delete(name);
      });
      watched.set(name, { lastSeen: now(), queue });
      if (watched.size > maxQueues) {
        const oldest = watched.keys().next();
        if (!oldest.done) forget(oldest.value);
      }
    },
    async read() {
      const at = now();
      const samples = await Promise.all(
        [...watched.entries()].map(async ([name, entry]) => {
          const { sizes } = stageNextBatchKeys(keys, name);
          const [counts, batched] = await Promise.all([
            entry.queue.getJobCounts('wait', 'prioritized', 'active', 'delayed'),
            connection.pipeline().hlen(sizes).hvals(sizes).exec(),
          ]);
          const [[, fields] = [], [, values] = []] = batched ?? [];
          const { waiting: jobs, active, delayed } = toJobCounts(counts);
          const waiting = jobs > 0 ? jobs + batchedExtra(Number(fields) || 0, values) : 0;
          let oldestAgeSeconds = 0;
          if (waiting > 0) {
            // Prioritized jobs (decision 0132): the first to go is the oldest of its priority.
            const [oldestId] = await entry.queue.getRanges(['wait', 'prioritized'], 0, 0, true);
            const created = oldestId ? Number(await connection.hget(entry.queue.toKey(oldestId), 'timestamp')) : NaN;
            if (Number.isFinite(created)) oldestAgeSeconds = Math.max(0, (at - created) / 1000);
          }
          const sample: StageNextQueueSample = { queue: name, waiting, active, delayed, oldestAgeSeconds };
          if (waiting + sample.active + sample.delayed === 0 && at - entry.lastSeen > idleMs) forget(name);
          return sample;
        }),
      );
      return samples;
    },
    async close() {
      const queues = [...watched.values()].map((e) => e.queue);
      watched.clear();
      await Promise.all(queues.map((q) => q.close()));
    },
  };
}
