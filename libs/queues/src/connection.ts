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
