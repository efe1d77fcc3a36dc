// A handler's maxConcurrent at the gateway (decision 0132): places of its StageNext queue, taken
// before a fetch and given back with the ack or handed on to the message the ack takes next,
// across two gateway processes (two Deliveries over their own fetchers, one Redis). Real Redis.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { QueueKeys } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stageQueueName } from '@po/contracts';
import {
  StageNextFetcher,
  createRedis,
  createStageNextPublisher,
  setStageNextConcurrency,
  stageNextPlaceKeys,
  type RedisConnection,
  type StageNextPublisher,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, stageNextMessage } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../testing/harness.js';
import { Deliveries, type Delivery } from './deliveries.js';
import { followQueueNews } from './queue-news.js';

let gw: WorkerGatewayHarness;
let redis: RedisConnection;
let publisher: StageNextPublisher;
let otherRedis: RedisConnection;
let otherWake: RedisConnection;
let other: Deliveries;
let otherFetcher: StageNextFetcher;

beforeAll(async () => {
  gw = await startWorkerGateway();
  redis = createRedis(TEST_REDIS_URL, 'producer');
  if (redis.status !== 'ready') await once(redis, 'ready');
  publisher = createStageNextPublisher(redis, gw.prefix);
  // A second gateway process on the same queues, subscribed to the queues' news as main.ts is.
  otherRedis = createRedis(TEST_REDIS_URL, 'worker');
  otherWake = createRedis(TEST_REDIS_URL, 'worker');
  otherFetcher = new StageNextFetcher(otherRedis, gw.prefix, { visibilityTimeoutMs: 60_000, stalledIntervalMs: 30_000 });
  const logger = createLogger({ service: 'worker-gateway', destination: new Writable({ write: (_c, _e, done) => done() }) });
  other = new Deliveries(
    otherFetcher,
    { maxInflight: 100, maxInflightPerApp: 100, maxWaitingPerApp: 100, maxInflightBytes: 64 * 1024 * 1024, visibilityTimeoutMs: 60_000, pollIntervalMs: 50, pollMaxMs: 2000 },
    logger,
  );
  await followQueueNews(otherWake, gw.prefix, other);
});

afterAll(async () => {
  other?.stopWaiting();
  await other?.releaseAll();
  await otherFetcher?.close();
  await otherWake?.quit();
  await otherRedis?.quit();
  await publisher?.close();
  await gw?.close();
  await redis?.quit();
});

/** A queue of its own holding `n` messages, limited to `limit` places. */
async function limitedQueue(n: number, limit: number, batch: boolean) {
  const handler = `places-${randomUUID().slice(0, 8)}`;
  const queue = stageQueueName(gw.appA.id, handler);
  await setStageNextConcurrency(redis, gw.prefix, queue, limit);
  await publisher.publish(
    queue,
    Array.from({ length: n }, () => stageNextMessage({ applicationId: gw.appA.id, stageHandlerName: handler })),
    batch ? {} : { batch: false },
  );
  const placesTaken = () => redis.zcard(stageNextPlaceKeys(new QueueKeys(gw.prefix), queue).places);
  return { queue, placesTaken };
}

const pullOn = (d: Deliveries, queue: string, waitSeconds = 2): Promise<Delivery | null> => d.pull(queue, gw.appA.id, waitSeconds, new AbortController().signal);

describe("a queue held to its handler's maxConcurrent", () => {
  it('two gateways hand out no more than its places; an ack with the next pull hands its place on; a place given back reaches a pull waiting there', async () => {
    const { queue, placesTaken } = await limitedQueue(6, 2, false);
    const a = await pullOn(gw.deliveries, queue);
    const b = await pullOn(other, queue);
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    expect(await placesTaken()).toBe(2);
    // Four messages wait, but no place is free on either gateway.
    const [third, fourth] = await Promise.all([pullOn(gw.deliveries, queue, 1), pullOn(other, queue, 1)]);
    expect(third).toBeNull();
    expect(fourth).toBeNull();
    // The ack takes the next message with it, in the place it leaves.
    const taken = await gw.deliveries.ackAndTake(a!.token, queue, gw.appA.id);
    expect(taken.acked).toBe(true);
    expect(taken.delivery).toBeTruthy();
    expect(await placesTaken()).toBe(2);
    // A pull waiting on the other gateway gets the place its own plain ack gives back, at once.
    const waiting = pullOn(other, queue, 10);
    await new Promise((r) => setTimeout(r, 300));
    const ackedAt = Date.now();
    expect(await other.ack(b!.token, false)).toBe(true);
    const got = await waiting;
    expect(got).not.toBeNull();
    expect(Date.now() - ackedAt).toBeLessThan(1000);
    expect(await placesTaken()).toBe(2);
    expect(await gw.deliveries.ack(taken.delivery!.token, true)).toBe(true);
    expect(await other.ack(got!.token, false)).toBe(true);
    await vi.waitFor(async () => expect(await placesTaken()).toBe(0));
  });

  it('the messages of a batch job are counted one place each', async () => {
    const { queue, placesTaken } = await limitedQueue(5, 2, true);
    const pulls = await Promise.all([pullOn(gw.deliveries, queue, 1), pullOn(gw.deliveries, queue, 1), pullOn(gw.deliveries, queue, 1)]);
    expect(pulls.filter(Boolean)).toHaveLength(2);
    expect(await placesTaken()).toBe(2);
    for (const d of pulls) if (d) expect(await gw.deliveries.ack(d.token, false)).toBe(true);
  });

  it('a limit set while a gateway has the queue open applies to its next fetch, through the limit channel', async () => {
    const handler = `places-${randomUUID().slice(0, 8)}`;
    const queue = stageQueueName(gw.appA.id, handler);
    const publish = (n: number) =>
      publisher.publish(
        queue,
        Array.from({ length: n }, () => stageNextMessage({ applicationId: gw.appA.id, stageHandlerName: handler })),
        { batch: false },
      );
    await publish(1);
    const first = await pullOn(other, queue); // opens the queue on the other gateway, unlimited
    expect(first).not.toBeNull();
    const held = pullOn(other, queue, 10); // keeps it open
    await setStageNextConcurrency(redis, gw.prefix, queue, 1);
    await new Promise((r) => setTimeout(r, 200));
    await publish(2);
    // `first` holds no place (taken before the limit): the one place goes to the waiting pull.
    const second = await held;
    expect(second).not.toBeNull();
    expect(await pullOn(other, queue, 1)).toBeNull();
    for (const d of [first, second]) expect(await other.ack(d!.token, false)).toBe(true);
  });
});
