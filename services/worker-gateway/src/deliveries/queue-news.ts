import { stageNextLimitChannel, stageNextWakeChannel, type RedisConnection } from '@po/queues';
import type { Deliveries } from './deliveries.js';

/**
 * Subscribes `subscriber` (a connection of its own) to what the queues announce: a queue gained a
 * message (wake-up), a queue's places' limit changed (decision 0132); and, after a reconnect, has
 * every waiting queue fetch and read its limit again, since announcements may have been missed.
 */
export async function followQueueNews(
  subscriber: RedisConnection,
  prefix: string,
  deliveries: Deliveries,
): Promise<void> {
  const limitChannel = stageNextLimitChannel(prefix);
  await subscriber.subscribe(stageNextWakeChannel(prefix), limitChannel);
  subscriber.on('message', (channel: string, queue: string) =>
    channel === limitChannel ? deliveries.limitChanged(queue) : deliveries.wake(queue),
  );
  subscriber.on('ready', () => deliveries.wakeAll());
}
