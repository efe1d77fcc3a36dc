// The lost-message walk (decisions 0121, 0124; issue 29 item 3): StageNext messages Redis lost are
// republished from their Pending rows in large pages, each once, and at once when Redis says it
// lost writes.
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPipeline } from '@po/domain';
import { Engine, insertPipeline } from '@po/engine';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageResultsProducer,
  stageNextBullName,
  type StageNextPublisher,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import type { DispatcherDeps } from './deps.js';
import { newLostMessageWalk, startLostMessageWalk, walkEverything, walkPage } from './lost-messages.js';
import { createRedisLossDetector } from './redis-loss.js';

let database: TestDatabase;
let applicationId: number;
const prefix = testQueuePrefix('lost');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const logLines: string[] = [];
const logger = createLogger({
  service: 'pipeline-service',
  destination: new Writable({
    write(chunk: Buffer, _e, done) {
      logLines.push(chunk.toString());
      done();
    },
  }),
});
let publisher: StageNextPublisher;
/** Execution ids of every message handed to the publisher, one entry per message. */
const published: string[] = [];
/** Messages handed over with `batch: false`: the walk's republishes must be (their job id is the execution id). */
let unbatched = 0;
let engine: Engine;

const db = () => database.db;

function depsWith(overrides: Partial<DispatcherDeps> = {}): DispatcherDeps {
  return {
    db: db(),
    engine,
    publisher,
    results: createStageResultsProducer(redis, prefix),
    logger,
    redisLoss: createRedisLossDetector(redis, prefix, 'test-instance'),
    queueSettings: { states: async (queues) => queues.map(() => ({ paused: false, concurrency: null })), setPaused: async () => undefined, setConcurrency: async () => undefined },
    ...overrides,
  };
}

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await db().application.create({ data: { name: 'lost' } })).id;
  const real = createStageNextPublisher(redis, prefix);
  publisher = {
    ...real,
    async publish(queue, messages, options) {
      for (const m of messages) published.push(m.executionId);
      if (options?.batch === false) unbatched += messages.length;
      // The engine's dispatch goes as singles here, so that a message can be lost on its own (a
      // lost batch job: libs/queues stage-next.int.test.ts).
      await real.publish(queue, messages, { batch: false });
    },
  };
  engine = new Engine({ db: db(), publisher, events: createPipelineEventsProducer(redis, prefix), logger, random: () => 0.5, maxActiveStages: 0 });
});

afterAll(async () => {
  await publisher.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

/** `count` one-stage pipelines of handlers `handlers[i % n]`, dispatched by the engine (Pending, message in Redis). */
async function dispatched(count: number, handlers: readonly string[]): Promise<{ stageId: number; executionId: string; handler: string }[]> {
  const ids: number[] = [];
  await db().$transaction(async (tx) => {
    for (let i = 0; i < count; i += 1) {
      const planned = planPipeline({ name: `p${i}`, stages: [{ stageName: 'a', stageHandlerName: handlers[i % handlers.length]!, input: `in-${i}` }] }, { applicationId });
      if (!planned.ok) throw new Error('invalid');
      ids.push(await insertPipeline(tx, planned.pipeline, new Date()));
    }
    // 1,200 inserts one by one: on a loaded CI box they outlast Prisma's default 5 s.
  }, { timeout: 120_000 });
  for (let i = 0; i < ids.length; i += 500) await engine.run(ids.slice(i, i + 500).map((pipelineId) => ({ kind: 'pass', pipelineId })));
  const stages = await db().stage.findMany({ where: { pipelineId: { in: ids.map(BigInt) } }, orderBy: { id: 'asc' } });
  return stages.map((s) => ({ stageId: Number(s.id), executionId: s.currentExecutionId!, handler: s.handlerName }));
}

const jobKey = (handler: string, executionId: string) => `${prefix}:${stageNextBullName(`app_${applicationId}_${handler}_StageNext`)}:${executionId}`;

/** Deletes the messages' job hashes, as a Redis that lost them would have none. */
async function lose(stages: readonly { handler: string; executionId: string }[]): Promise<void> {
  for (let i = 0; i < stages.length; i += 500) await redis.del(...stages.slice(i, i + 500).map((s) => jobKey(s.handler, s.executionId)));
}

async function present(stages: readonly { handler: string; executionId: string }[]): Promise<number> {
  let n = 0;
  for (let i = 0; i < stages.length; i += 500) n += await redis.exists(...stages.slice(i, i + 500).map((s) => jobKey(s.handler, s.executionId)));
  return n;
}

const age = (seconds: number) => db().$executeRaw`UPDATE stage_executions SET dispatched_at = dispatched_at - make_interval(secs => ${seconds}::float8)`;

/** Walks from the start to the end of the waiting executions; resolves with the pages' figures. */
async function walkAll(deps: DispatcherDeps, pageSize: number, afterLoss = false) {
  const walk = newLostMessageWalk();
  if (afterLoss) walkEverything(walk);
  const pages = [];
  for (;;) {
    const page = await walkPage(deps, { lostMessageAfterSeconds: 30, pageSize }, walk);
    pages.push(page);
    if (walk.cursor.executionId === '00000000-0000-0000-0000-000000000000') return pages;
  }
}

describe('the lost-message walk', () => {
  it('republishes every lost message of 1,200 Pending stages over three queues in one walk of 200-execution pages, each once, and nothing that is present', async () => {
    const stages = await dispatched(1200, ['walk-a', 'walk-b', 'walk:c']);
    await age(60);
    expect(await present(stages)).toBe(1200);
    // Every message is there: a walk publishes nothing.
    published.length = 0;
    const idle = await walkAll(depsWith(), 200);
    expect(idle.reduce((n, p) => n + p.examined, 0)).toBe(1200);
    expect(published).toEqual([]);

    // Two thirds lost, spread over every page and queue.
    const lost = stages.filter((_, i) => i % 3 !== 0);
    await lose(lost);
    unbatched = 0;
    const pages = await walkAll(depsWith(), 200);
    expect(pages.length).toBe(7);
    expect(pages.slice(0, 6).every((p) => p.goOn)).toBe(true);
    expect(pages.reduce((n, p) => n + p.republished, 0)).toBe(800);
    expect(published.length).toBe(800);
    expect(unbatched).toBe(800);
    expect(new Set(published)).toEqual(new Set(lost.map((s) => s.executionId)));
    expect(await present(stages)).toBe(1200);
    const job = JSON.parse((await redis.hget(jobKey(lost[0]!.handler, lost[0]!.executionId), 'data'))!);
    expect(job).toMatchObject({ executionId: lost[0]!.executionId, stageId: lost[0]!.stageId, applicationId });

    // Now present again: a second walk publishes nothing more.
    await walkAll(depsWith(), 200);
    expect(published.length).toBe(800);
    expect(await db().stage.count({ where: { id: { in: stages.map((s) => BigInt(s.stageId)) }, status: 'Pending' } })).toBe(1200);
  });

  it('at rest leaves a message lost less than DISPATCH_LOST_MESSAGE_AFTER_SECONDS ago alone; after Redis lost writes, walks everything dispatched before at once', async () => {
    await db().$executeRaw`UPDATE stages SET status = 'Cancelled' WHERE status = 'Pending'`;
    await db().$executeRaw`UPDATE stage_executions SET ended_at = now(), end_reason = 'cancelled' WHERE ended_at IS NULL`;
    const stages = await dispatched(300, ['fresh']);
    await lose(stages);
    published.length = 0;
    await walkAll(depsWith(), 100);
    expect(published).toEqual([]);

    const pages = await walkAll(depsWith(), 100, true);
    expect(pages.reduce((n, p) => n + p.republished, 0)).toBe(300);
    expect(published.length).toBe(300);
    expect(await present(stages)).toBe(300);
  });

  it("tells that Redis lost writes when a marker is gone or holds an older value than its process wrote", async () => {
    const detector = createRedisLossDetector(redis, prefix, 'detector-test');
    const key = `{${prefix}:redis-loss}:detector-test`;
    expect(await detector.check()).toBe(false);
    expect(await detector.check()).toBe(false);
    await redis.del(key);
    expect(await detector.check()).toBe(true);
    expect(await detector.check()).toBe(false);
    // A failover to a replica that missed the last writes: the value goes back.
    const now = Number(await redis.get(key));
    await redis.set(key, String(now - 1));
    expect(await detector.check()).toBe(true);
    expect(await detector.check()).toBe(false);
  });

  it('running: a marker gone makes the walk republish every lost message at once, without waiting for their age or the interval', async () => {
    await db().$executeRaw`UPDATE stages SET status = 'Cancelled' WHERE status = 'Pending'`;
    await db().$executeRaw`UPDATE stage_executions SET ended_at = now(), end_reason = 'cancelled' WHERE ended_at IS NULL`;
    const stages = await dispatched(600, ['flushed-a', 'flushed-b']);
    const deps = depsWith({ redisLoss: createRedisLossDetector(redis, prefix, 'running-walk') });
    const walk = startLostMessageWalk(deps, { lostMessageAfterSeconds: 30, idleMs: 60_000, pageSize: 250 });
    try {
      // Its first look writes the marker.
      await sleep(300);
      published.length = 0;
      await lose(stages);
      await redis.del(`{${prefix}:redis-loss}:running-walk`);
      const until = Date.now() + 10_000;
      while ((await present(stages)) < 600 && Date.now() < until) await sleep(100);
      expect(await present(stages)).toBe(600);
      expect(published.length).toBe(600);
      expect(logLines.some((l) => l.includes('walked every waiting execution after Redis lost writes'))).toBe(true);
    } finally {
      await walk.stop();
    }
  });
});
