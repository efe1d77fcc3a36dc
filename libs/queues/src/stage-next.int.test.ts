// StageNext publishing (decision 0125's next step): several messages dispatched to one queue are one
// batch job, and `missing()` still answers per message, through the queue's `batched` hash. Pausing a
// handler's queue (decision 0132): BullMQ's pause, and its state read back per queue; a handler's
// maxConcurrent as the queue's places.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Queue, QueueKeys } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StageNextMessage } from '@po/contracts';
import { TEST_REDIS_URL, cleanupRedisPrefix, testQueuePrefix, stageNextMessage } from '@po/testing';
import { createRedis } from './connection.js';
import { STAGE_NEXT_BATCH_JOB, createStageNextPublisher, stageNextBatchKeys, stageNextBullName, type StageNextBatchJob } from './stage-next.js';
import { setStageNextConcurrency, setStageNextPaused, stageNextQueueStates } from './stage-next-pause.js';
import { StageNextPlaces } from './stage-next-places.js';

const prefix = testQueuePrefix('stage-next');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const publisher = createStageNextPublisher(redis, prefix);
const queues: Queue[] = [];

beforeAll(async () => {
  // A producer connection has no offline queue: wait until it is up.
  if (redis.status !== 'ready') await once(redis, 'ready');
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await publisher.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
});

function message(executionId = randomUUID()): StageNextMessage {
  return stageNextMessage({ applicationId: 1, pipelineId: 2, stageId: 3, executionId });
}

/** A queue of its own per test, and a BullMQ Queue to look into it. */
function freshQueue(handler = 'h') {
  const name = `app_1_${handler}-${randomUUID().slice(0, 8)}_StageNext`;
  const bull = new Queue(stageNextBullName(name), { connection: redis, prefix });
  queues.push(bull);
  return { name, bull };
}

const asked = (name: string, messages: readonly StageNextMessage[]) => messages.map((m) => ({ queue: name, executionId: m.executionId }));

describe('StageNext publisher', () => {
  it('publishes 5 messages to one queue as one batch job, and missing() finds none of them missing', async () => {
    const { name, bull } = freshQueue();
    const messages = Array.from({ length: 5 }, () => message());
    await publisher.publish(name, messages);
    const jobs = await bull.getJobs(['waiting', 'prioritized']);
    expect(jobs.length).toBe(1);
    expect(jobs[0]!.name).toBe(STAGE_NEXT_BATCH_JOB);
    expect(jobs[0]!.id).toMatch(/^b-/);
    expect((jobs[0]!.data as StageNextBatchJob).batch.map((m) => m.executionId)).toEqual(messages.map((m) => m.executionId));
    expect(await publisher.missing(asked(name, messages))).toEqual(new Set());
  });

  it('missing() reports every message of a batch whose job Redis lost', async () => {
    const { name, bull } = freshQueue();
    const messages = Array.from({ length: 5 }, () => message());
    const present = message();
    await publisher.publish(name, messages);
    await publisher.publish(name, [present]);
    const [batch] = (await bull.getJobs(['waiting', 'prioritized'])).filter((j) => j.name === STAGE_NEXT_BATCH_JOB);
    await redis.del(bull.toKey(batch!.id!));
    expect(await publisher.missing(asked(name, [...messages, present]))).toEqual(new Set(messages.map((m) => m.executionId)));
  });

  it('publishes a single message as before: one job whose id is its executionId, and no batch bookkeeping', async () => {
    const { name, bull } = freshQueue();
    const only = message();
    await publisher.publish(name, [only]);
    const jobs = await bull.getJobs(['waiting', 'prioritized']);
    expect(jobs.map((j) => [j.id, j.name])).toEqual([[only.executionId, 'stage']]);
    const { batched, sizes } = stageNextBatchKeys(new QueueKeys(prefix), name);
    expect(await redis.exists(batched, sizes)).toBe(0);
    await redis.del(bull.toKey(only.executionId));
    expect(await publisher.missing(asked(name, [only]))).toEqual(new Set([only.executionId]));
  });

  it('with { batch: false } adds one job per message, its id the executionId (what the lost-message walk relies on)', async () => {
    const { name, bull } = freshQueue();
    const messages = Array.from({ length: 5 }, () => message());
    await publisher.publish(name, messages, { batch: false });
    const jobs = await bull.getJobs(['waiting', 'prioritized']);
    expect(jobs.map((j) => j.id).sort()).toEqual(messages.map((m) => m.executionId).sort());
    // Published again, none is added twice.
    await publisher.publish(name, messages, { batch: false });
    expect(await bull.getJobCountByTypes('waiting', 'prioritized')).toBe(5);
  });

  it('splits a dispatch of more than 32 messages into batches of at most 32, each message in exactly one', async () => {
    const { name, bull } = freshQueue();
    const messages = Array.from({ length: 40 }, () => message());
    await publisher.publish(name, messages);
    const jobs = await bull.getJobs(['waiting', 'prioritized']);
    const sizes = jobs.map((j) => (j.data as StageNextBatchJob).batch.length);
    expect(sizes.every((n) => n <= 32)).toBe(true);
    expect(jobs.flatMap((j) => (j.data as StageNextBatchJob).batch.map((m) => m.executionId)).sort()).toEqual(messages.map((m) => m.executionId).sort());
    const { batched } = stageNextBatchKeys(new QueueKeys(prefix), name);
    expect(await redis.hlen(batched)).toBe(40);
  });

  it('keeps a batch near 1 MiB: large messages share fewer batches, and one too large to share goes as a job of its own', async () => {
    const { name, bull } = freshQueue();
    const large = Array.from({ length: 6 }, () => ({ ...message(), input: 'x'.repeat(300_000) }));
    const huge = { ...message(), input: 'y'.repeat(1_200_000) };
    await publisher.publish(name, [...large, huge]);
    const jobs = await bull.getJobs(['waiting', 'prioritized']);
    const batches = jobs.filter((j) => j.name === 'batch').map((j) => (j.data as StageNextBatchJob).batch.length);
    // 3 × 300 KB fit under 1 MiB, 4 do not.
    expect(batches.sort()).toEqual([3, 3]);
    const single = jobs.find((j) => j.name !== 'batch');
    expect(single?.id).toBe(huge.executionId);
  });
});

describe('StageNext pause', () => {
  // A handler name with the characters the BullMQ name encodes, so the mapping is exercised.
  const handler = 'pay:{x}%';

  it('pauses a handler queue as BullMQ sees it, and resumes it with its jobs kept', async () => {
    const { name, bull } = freshQueue(handler);
    await publisher.publish(name, [message()]);
    await setStageNextPaused(redis, prefix, name, true);
    expect(await bull.isPaused()).toBe(true);
    expect(await stageNextQueueStates(redis, prefix, [name])).toEqual([{ paused: true, concurrency: null }]);
    await setStageNextPaused(redis, prefix, name, false);
    expect(await bull.isPaused()).toBe(false);
    expect(await bull.getJobCountByTypes('prioritized', 'wait')).toBe(1);
  });

  it('is idempotent, and reads the states of several queues in the order given', async () => {
    const [a, b, never] = [freshQueue(handler), freshQueue(handler), freshQueue(handler)];
    await setStageNextPaused(redis, prefix, a.name, true);
    await setStageNextPaused(redis, prefix, a.name, true);
    await setStageNextPaused(redis, prefix, b.name, false);
    expect((await stageNextQueueStates(redis, prefix, [never.name, a.name, b.name])).map((s) => s.paused)).toEqual([false, true, false]);
    expect(await stageNextQueueStates(redis, prefix, [])).toEqual([]);
  });
});

describe('StageNext places (a handler maxConcurrent, decision 0132)', () => {
  it('a limited queue has that many places across every taker; one given back or lapsed is free again; without a limit nothing is counted', async () => {
    const { name } = freshQueue('limited:{x}%');
    const places = new StageNextPlaces(redis, prefix);
    const other = new StageNextPlaces(redis, prefix); // another gateway
    const t0 = Date.now();
    const lapse = t0 + 60_000;
    expect(await places.limited(name)).toBe(false);
    expect(await places.take(name, ['p1', 'p2', 'p3'], t0, lapse)).toBe(3);
    await setStageNextConcurrency(redis, prefix, name, 2);
    expect(await places.limited(name)).toBe(true);
    expect(await stageNextQueueStates(redis, prefix, [name])).toEqual([{ paused: false, concurrency: 2 }]);
    // Places are counted from the limit on: the three above were not recorded.
    expect(await places.take(name, ['a', 'b', 'c'], t0, lapse)).toBe(2);
    expect(await other.take(name, ['d'], t0, lapse)).toBe(0);
    places.release(name, ['a']);
    await redis.ping(); // the release is not waited for; a command after it on the connection is
    expect(await other.take(name, ['d', 'e'], t0, lapse)).toBe(1);
    // A place whose holder died lapses: 'b' was taken to lapse at t0 + 60 s.
    expect(await other.take(name, ['f'], t0 + 60_001, t0 + 120_000)).toBe(1);
    // Renewed with the delivery it went on to, a place does not lapse at its first time.
    other.renew(name, 'f', t0 + 500_000);
    await redis.ping();
    expect(await places.take(name, ['g'], t0 + 120_001, t0 + 180_000)).toBe(1); // 'd' lapsed, 'f' did not
    expect(await places.take(name, ['h'], t0 + 120_001, t0 + 180_000)).toBe(0);
    await setStageNextConcurrency(redis, prefix, name, null);
    expect(await stageNextQueueStates(redis, prefix, [name])).toEqual([{ paused: false, concurrency: null }]);
    expect(await places.take(name, ['i', 'j', 'k'], t0, lapse)).toBe(3);
  });
});
