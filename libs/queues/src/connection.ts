import type { QueueBase } from 'bullmq';
import { Redis } from 'ioredis';

/**
 * Producers fail fast when Redis is away (no offline queue, so a 2xx is never given for a message
 * that sits in process memory); BullMQ workers retry forever (maxRetriesPerRequest: null).
 */
export function createRedis(url: string, role: 'producer' | 'worker'): Redis {
  return new Redis(url, {
    lazyConnect: false,
    enableOfflineQueue: role === 'worker',
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    connectionName: `po-${role}`,
  });
}

/** Readiness probe shared by the services. */
export async function pingRedis(redis: Redis): Promise<void> {
  const answer = await redis.ping();
  if (answer !== 'PONG') throw new Error(`unexpected PING answer ${answer}`);
}

/**
 * BullMQ sets a queue's connection up once (it waits for Redis and asks for its version) and keeps
 * that promise: if Redis was away at that moment, the queue fails every later call with the old
 * error, long after Redis is back. Producers fail fast, so a queue first used during an outage is
 * broken for good. `onBroken` runs when that happens, so whoever caches the queue drops it and
 * makes a fresh one on its next use.
 */
export function dropIfSetupFails<Q extends QueueBase>(queue: Q, onBroken: () => void): Q {
  queue.waitUntilReady().catch(() => {
    onBroken();
    void queue.close().catch(() => undefined);
  });
  return queue;
}

/** One queue, made on first use and made again after its setup failed (see dropIfSetupFails). */
export function reopeningQueue<Q extends QueueBase>(make: () => Q): { get(): Q; close(): Promise<void> } {
  let current: Q | undefined;
  return {
    get() {
      if (!current) {
        const made = make();
        current = dropIfSetupFails(made, () => {
          if (current === made) current = undefined;
        });
      }
      return current;
    },
    close: async () => {
      await current?.close();
    },
  };
}
