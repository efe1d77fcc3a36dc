// Batch jobs at the gateway (decision 0125's next step): a StageNext job carrying several messages
// is split by the fetcher, each message delivered, acked or requeued on its own, and the job
// completed once all of them are settled. Real Redis, real fetcher, through Deliveries.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, QueueKeys } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stageQueueName, type StageNextMessage } from '@po/contracts';
import {
  STAGE_NEXT_BATCH_JOB,
  StageNextFetcher,
  createRedis,
  createStageNextPublisher,
  createStageNextQueueStats,
  readStageNextDepths,
  stageNextBatchKeys,
  stageNextBullName,
  type RedisConnection,
  type StageNextPublisher,
} from '@po/queues';
import { TEST_REDIS_URL, stageNextMessage } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../testing/harness.js';
import type { Delivery } from './deliveries.js';

let gw: WorkerGatewayHarness;
let redis: RedisConnection;
let publisher: StageNextPublisher;
const queues: Queue[] = [];

beforeAll(async () => {
  gw = await startWorkerGateway();
  redis = createRedis(TEST_REDIS_URL, 'producer');
  if (redis.status !== 'ready') await once(redis, 'ready');
  publisher = createStageNextPublisher(redis, gw.prefix);
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await publisher?.close();
  await gw?.close();
  await redis?.quit();
});

function message(handler: string): StageNextMessage {
  return stageNextMessage({ applicationId: gw.appA.id, stageHandlerName: handler });
}

/** A queue of its own with `n` messages published together (one batch job), and a look into it. */
async function batchOf(n: number) {
  const handler = `batch-${randomUUID().slice(0, 8)}`;
  const queue = stageQueueName(gw.appA.id, handler);
  const messages = Array.from({ length: n }, () => message(handler));
  await publisher.publish(queue, messages);
  const bull = new Queue(stageNextBullName(queue), { connection: redis, prefix: gw.prefix });
  queues.push(bull);
  const [job] = await bull.getJobs(['waiting', 'prioritized']);
  const { batched } = stageNextBatchKeys(new QueueKeys(gw.prefix), queue);
  return { queue, messages, bull, batchId: job!.id!, batched };
}

const pull = async (queue: string): Promise<Delivery> => {
  const d = await gw.deliveries.pull(queue, gw.appA.id, 2, new AbortController().signal);
  if (!d) throw new Error('no delivery');
  return d;
};

describe('batch jobs at the gateway', () => {
  it('delivers a batch of 3 to three pulls; the batch job stays active until the third ack, then it is gone with its batched fields', async () => {
    const { queue, messages, bull, batchId, batched } = await batchOf(3);
    const deliveries = [await pull(queue), await pull(queue), await pull(queue)];
    expect(deliveries.map((d) => d.messageId).sort()).toEqual(messages.map((m) => m.executionId).sort());
    expect(deliveries.map((d) => d.payload.executionId)).toEqual(deliveries.map((d) => d.messageId));
    expect(await bull.getJobState(batchId)).toBe('active');
    expect(await gw.deliveries.ack(deliveries[0]!.token, false)).toBe(true);
    expect(await gw.deliveries.ack(deliveries[1]!.token, false)).toBe(true);
    expect(await bull.getJobState(batchId)).toBe('active');
    // An acked message gives up its field at once: only the unacked one is still the batch's.
    await vi.waitFor(async () => expect(await redis.hkeys(batched)).toEqual([deliveries[2]!.messageId]));
    expect(await gw.deliveries.ack(deliveries[2]!.token, false)).toBe(true);
    expect(await bull.getJob(batchId)).toBeUndefined();
    await vi.waitFor(async () => expect(await redis.exists(batched)).toBe(0));
  });

  it('a requeued message of a batch comes back as its own job, deliverable again, while the others complete the batch', async () => {
    const { queue, bull, batchId } = await batchOf(3);
    const [a, b, c] = [await pull(queue), await pull(queue), await pull(queue)];
    expect(await gw.deliveries.ack(b.token, true)).toBe(true);
    expect(await bull.getJobState(b.messageId)).toBe('prioritized');
    expect(await bull.getJobState(batchId)).toBe('active');
    await gw.deliveries.ack(a.token, false);
    await gw.deliveries.ack(c.token, false);
    expect(await bull.getJob(batchId)).toBeUndefined();
    const again = await pull(queue);
    expect(again.messageId).toBe(b.messageId);
    expect(again.payload).toEqual(b.payload);
    expect(await bull.getJobState(b.messageId)).toBe('active');
    await gw.deliveries.ack(again.token, false);
    expect(await bull.getJob(b.messageId)).toBeUndefined();
  });

  it('a message of a batch no pull takes goes back to its queue as its own job after about a second', async () => {
    const { queue, messages, bull, batchId } = await batchOf(3);
    const first = await pull(queue);
    const others = messages.map((m) => m.executionId).filter((id) => id !== first.messageId);
    await sleep(300);
    expect(await bull.getJobCountByTypes('waiting', 'prioritized')).toBe(0);
    await vi.waitFor(async () => expect((await bull.getJobs(['waiting', 'prioritized'])).map((j) => j.id).sort()).toEqual(others.sort()), { timeout: 3000 });
    expect(await bull.getJobState(batchId)).toBe('active');
    // They keep the batch's priority (decision 0132): a job without one would jump every queue.
    const batchPriority = (await bull.getJob(batchId))!.priority;
    expect(batchPriority).toBeGreaterThan(0);
    expect((await bull.getJobs(['prioritized'])).map((j) => j.priority)).toEqual(others.map(() => batchPriority));
    await gw.deliveries.ack(first.token, false);
    expect(await bull.getJob(batchId)).toBeUndefined();
    // The returned ones are deliverable as any message.
    expect([(await pull(queue)).messageId, (await pull(queue)).messageId].sort()).toEqual(others.sort());
  });

  it('an ack with the next pull takes the next message of the batch, and the last ack completes the batch and takes the next job in the same call', async () => {
    const { queue, messages, bull, batchId } = await batchOf(3);
    const after = message('after');
    await publisher.publish(queue, [after]);
    let d = await pull(queue);
    const seen = [d.messageId];
    for (let i = 0; i < 2; i += 1) {
      const { acked, delivery } = await gw.deliveries.ackAndTake(d.token, queue, gw.appA.id);
      expect(acked).toBe(true);
      d = delivery!;
      seen.push(d.messageId);
      expect(await bull.getJobState(batchId)).toBe('active');
    }
    expect(seen.sort()).toEqual(messages.map((m) => m.executionId).sort());
    const last = await gw.deliveries.ackAndTake(d.token, queue, gw.appA.id);
    expect(await bull.getJob(batchId)).toBeUndefined();
    expect(last.delivery?.messageId).toBe(after.executionId);
    expect(await bull.getJobState(after.executionId)).toBe('active');
    await gw.deliveries.ack(last.delivery!.token, false);
  });

  it('a malformed message of a batch is dropped without failing the others, which complete the batch', async () => {
    const handler = `bad-${randomUUID().slice(0, 8)}`;
    const queue = stageQueueName(gw.appA.id, handler);
    const good = [message(handler), message(handler)];
    const bull = new Queue(stageNextBullName(queue), { connection: redis, prefix: gw.prefix });
    queues.push(bull);
    await bull.add(STAGE_NEXT_BATCH_JOB, { batch: [good[0], { executionId: randomUUID(), input: 7 }, good[1]] }, { jobId: 'b-malformed', removeOnComplete: true });
    const [a, b] = [await pull(queue), await pull(queue)];
    expect([a.messageId, b.messageId]).toEqual(good.map((m) => m.executionId));
    expect(await gw.deliveries.pull(queue, gw.appA.id, 0, new AbortController().signal)).toBeNull();
    await gw.deliveries.ack(a.token, false);
    expect(await bull.getJobState('b-malformed')).toBe('active');
    await gw.deliveries.ack(b.token, false);
    expect(await bull.getJob('b-malformed')).toBeUndefined();
  });

  it('completing a batch whose lock lapsed is no error, and leaves the job for the stalled check to bring back', async () => {
    const { queue, bull, batchId } = await batchOf(2);
    const [a, b] = await Promise.all([gw.fetcher.fetch(queue), gw.fetcher.fetch(queue)]);
    await redis.del(`${bull.toKey(batchId)}:lock`);
    await gw.fetcher.complete(a!);
    await expect(gw.fetcher.complete(b!)).resolves.toBeUndefined();
    expect(await bull.getJob(batchId)).toBeDefined();
  });

  it('a gateway that dies holding a batch: the batch comes back with only the messages it had not settled', async () => {
    const { queue, messages, bull, batchId, batched } = await batchOf(3);
    // Two gateways' fetchers, with a short visibility timeout so the lock lapses in the test.
    const options = { visibilityTimeoutMs: 1000, stalledIntervalMs: 300 };
    const dying = new StageNextFetcher(redis, gw.prefix, options);
    const survivor = new StageNextFetcher(redis, gw.prefix, options);
    try {
      const first = await dying.fetch(queue);
      const second = await dying.fetch(queue);
      // One acked, one delivered and never acked, one still buffered: then the process is gone.
      await dying.complete(first!);
      await vi.waitFor(async () => expect(await redis.hexists(batched, first!.id)).toBe(0));
      await dying.close().catch(() => undefined);
      // close() returned the buffered one as a job of its own; the delivered one waits for the lapse.
      const returned = new Set<string>();
      await vi.waitFor(
        async () => {
          const m = await survivor.fetch(queue);
          if (m) {
            returned.add(m.id);
            await survivor.complete(m);
          }
          expect(returned.size).toBe(2);
        },
        { timeout: 10_000, interval: 200 },
      );
      expect([...returned].sort()).toEqual(messages.map((m) => m.executionId).filter((id) => id !== first!.id).sort());
      expect(returned.has(second!.id)).toBe(true);
      await vi.waitFor(async () => expect(await bull.getJob(batchId)).toBeUndefined());
    } finally {
      await survivor.close();
    }
  });

  it('fetches sent together for one queue take one batch, not one batch each', async () => {
    const { queue, messages, bull } = await batchOf(3);
    await publisher.publish(queue, [message('x'), message('x'), message('x')]);
    const fetched = await Promise.all([gw.fetcher.fetch(queue), gw.fetcher.fetch(queue), gw.fetcher.fetch(queue)]);
    expect(fetched.map((m) => m?.id).sort()).toEqual(messages.map((m) => m.executionId).sort());
    expect(await bull.getJobCountByTypes('waiting', 'prioritized')).toBe(1);
    for (const m of fetched) await gw.fetcher.complete(m!);
  });

  it('the depth gauges count the messages of a waiting batch, not its job', async () => {
    const { queue } = await batchOf(3);
    await publisher.publish(queue, [message('single')]);
    const [depth] = await readStageNextDepths(redis, gw.prefix, [queue]);
    expect(depth!.waiting).toBe(4);
    const stats = createStageNextQueueStats(redis, gw.prefix);
    try {
      stats.note(queue);
      expect((await stats.read()).find((s) => s.queue === queue)?.waiting).toBe(4);
      // Once a gateway fetched the batch (added first, so fetched first), only the single waits.
      const d = await pull(queue);
      await vi.waitFor(async () => expect((await readStageNextDepths(redis, gw.prefix, [queue]))[0]!.waiting).toBe(1));
      await gw.deliveries.ack(d.token, false);
    } finally {
      await stats.close();
    }
  });
});
