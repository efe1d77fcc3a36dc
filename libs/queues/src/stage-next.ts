import { Queue, QueueKeys } from 'bullmq';
import type { StageNextJob, StageNextMessage } from '@po/contracts';
import { dropIfSetupFails, type RedisConnection } from './connection.js';

/**
 * Queues `app_{applicationId}_{handler}_StageNext` (addendum §9): one BullMQ queue per application
 * and handler. The job id is the executionId, so a republish of the same dispatch is a no-op while
 * the job exists, and `messageId` is stable across redeliveries.
 *
 * Callers always speak the worker-facing name (pull requests and responses, wake-ups, metrics);
 * only this library turns it into the BullMQ name (`stageNextBullName`).
 */
export type { StageNextJob, StageNextMessage };

/** Pub/sub channel on which a queue's worker-facing name is announced when it gains a message. */
export const stageNextWakeChannel = (prefix: string): string => `${prefix}:stage-next:wake`;

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

const JOB_OPTIONS = { removeOnComplete: true, removeOnFail: true, attempts: 1 } as const;

/** Publisher queues kept open at once: each costs listeners on the shared connection. */
const MAX_OPEN_QUEUES = 1000;

export interface StageNextPublisher {
  /** Adds each message to its queue; resolves once Redis confirmed every add. */
  publish(queue: string, messages: StageNextJob[]): Promise<void>;
  /** The execution ids among `jobs` whose message is not in Redis any more (in no state at all). */
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
    const made = new Queue(stageNextBullName(name), { connection, prefix, defaultJobOptions: JOB_OPTIONS });
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
  return {
    async publish(name, messages) {
      if (messages.length === 0) return;
      const entry = open(name);
      entry.busy += 1;
      try {
        // One message (every dispatch at light load) goes by `add`: addBulk builds an ioredis
        // pipeline, which copies every BullMQ script onto itself — twice the CPU for the same call.
        const [only] = messages;
        if (messages.length === 1 && only) await entry.queue.add('stage', only, { jobId: only.executionId });
        else await entry.queue.addBulk(messages.map((m) => ({ name: 'stage', data: m, opts: { jobId: m.executionId } })));
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
          const pipeline = connection.pipeline();
          for (const id of ids) pipeline.exists(keys.toKey(stageNextBullName(queue), id));
          const answers = (await pipeline.exec()) ?? [];
          ids.forEach((id, i) => {
            const [err, found] = answers[i] ?? [new Error('no answer'), 0];
            if (!err && found === 0) gone.add(id);
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
