import { createHash } from 'node:crypto';
import { QueueKeys } from 'bullmq';
import { stageNextBullName } from './stage-next.js';
import type { RedisConnection } from './connection.js';

/**
 * A handler's maxConcurrent as places of its StageNext queue (decision 0132): at most that many of
 * its messages delivered and not yet acknowledged at once, across every gateway. BullMQ's own
 * global concurrency counts jobs, and a batch job (decision 0127) carries many messages; places
 * count messages, so a limited queue keeps its batch jobs.
 *
 * `{queue}:max-concurrent` holds the limit (absent: none). `{queue}:places` is a sorted set with a
 * member per place taken (an id the gateway gives the delivery), scored with when it lapses (the
 * delivery's visibility timeout): the places of a gateway that died come back when its messages
 * do. Both keys carry the queue's hash tag, so on a cluster they live with the queue.
 */
export const stageNextPlaceKeys = (keys: QueueKeys, queue: string) => ({
  limit: keys.toKey(stageNextBullName(queue), 'max-concurrent'),
  places: keys.toKey(stageNextBullName(queue), 'places'),
});

/**
 * KEYS: limit, places. ARGV: now (ms), lapse (ms), then the ids wanted. Takes as many places as
 * are free, in the order of the ids, and answers how many; without a limit, all (none recorded).
 */
const TAKE = `
local limit = tonumber(redis.call('GET', KEYS[1]))
local wanted = #ARGV - 2
if not limit then return wanted end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
local n = math.min(limit - redis.call('ZCARD', KEYS[2]), wanted)
for i = 1, n do redis.call('ZADD', KEYS[2], ARGV[2], ARGV[2 + i]) end
return math.max(n, 0)
`;
const TAKE_SHA = createHash('sha1').update(TAKE).digest('hex');

/** Places of limited StageNext queues, taken and given back by a worker-gateway. */
export class StageNextPlaces {
  private readonly keys: QueueKeys;

  constructor(
    private readonly connection: RedisConnection,
    prefix: string,
  ) {
    this.keys = new QueueKeys(prefix);
  }

  /** How many of `ids` (the first ones) got a place of the queue, each lapsing at `lapseAt` unless given back. */
  async take(queue: string, ids: readonly string[], now: number, lapseAt: number): Promise<number> {
    if (ids.length === 0) return 0;
    const { limit, places } = stageNextPlaceKeys(this.keys, queue);
    const args = [limit, places, now, lapseAt, ...ids];
    try {
      return Number(await this.connection.evalsha(TAKE_SHA, 2, ...args));
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return Number(await this.connection.eval(TAKE, 2, ...args));
    }
  }

  /** Gives places back (an ack, a requeue). Not waited for: a place lost here lapses on its own. */
  release(queue: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    void this.connection.zrem(stageNextPlaceKeys(this.keys, queue).places, ...ids).catch(() => undefined);
  }

  /** A place handed from an acked delivery to the next one lapses with the new one. Not waited for. */
  renew(queue: string, id: string, lapseAt: number): void {
    void this.connection.zadd(stageNextPlaceKeys(this.keys, queue).places, 'XX', lapseAt, id).catch(() => undefined);
  }

  /** Whether the queue has a limit now (one EXISTS). */
  async limited(queue: string): Promise<boolean> {
    return (await this.connection.exists(stageNextPlaceKeys(this.keys, queue).limit)) === 1;
  }
}
