// Flow control at dispatch (decision 0132) over real PostgreSQL and Redis: concurrency keys, fair
// turns, priorities, a handler's pause and maxPerSecond, maxConcurrent left to the handler's queue,
// and the order of the StageNext jobs when workers or a handler's limit are the bottleneck.
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPipeline, type PipelineDefinitionInput, type StageOptionsInput } from '@po/domain';
import { STAGE_NEXT_BATCH_JOB, createPipelineEventsProducer, createRedis, createStageNextPublisher, stageNextBullName, type StageNextBatchJob, type StageNextJob } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { Engine, type EngineDeps } from './engine.js';
import { insertPipeline } from './steps/create.js';

let database: TestDatabase;
let deps: EngineDeps;
let applicationId: number;
const prefix = testQueuePrefix('flow');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const engines: Engine[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'flow' } })).id;
  deps = {
    db: database.db,
    publisher: createStageNextPublisher(redis, prefix),
    events: createPipelineEventsProducer(redis, prefix),
    logger: createLogger({ service: 'engine', destination: new Writable({ write: (_c, _e, done) => done() }) }),
    random: Math.random,
    maxActiveStages: 0,
  };
  // Two engines over one database: what two pipeline-service or result-consumer replicas are.
  engines.push(new Engine(deps), new Engine(deps));
});

afterAll(async () => {
  await deps.publisher.close();
  await deps.events.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

const db = () => database.db;
const engine = () => engines[0]!;

async function create(handler: string, options: StageOptionsInput = {}, pipeline: Partial<PipelineDefinitionInput> = {}, app = applicationId): Promise<number> {
  const planned = planPipeline({ name: handler, stages: [{ stageName: 's', stageHandlerName: handler, options }], ...pipeline }, { applicationId: app });
  if (!planned.ok) throw new Error(JSON.stringify(planned.errors));
  return db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
}

const pass = (ids: readonly number[], on = engine()) => on.run(ids.map((pipelineId) => ({ kind: 'pass' as const, pipelineId })));

async function settings(handler: string, s: { paused?: boolean; maxConcurrent?: number | null; maxPerSecond?: number | null }): Promise<void> {
  await db().$executeRaw`
    INSERT INTO handler_settings (application_id, handler_name, paused, max_concurrent, max_per_second)
    VALUES (${applicationId}, ${handler}, ${s.paused ?? false}, ${s.maxConcurrent ?? null}::int, ${s.maxPerSecond ?? null}::float8)
    ON CONFLICT (application_id, handler_name) DO UPDATE SET paused = excluded.paused, max_concurrent = excluded.max_concurrent,
      max_per_second = excluded.max_per_second, tokens_at = NULL`;
}

/** The stage of each one-stage pipeline, in the order given. */
async function stagesOf(ids: readonly number[]) {
  const rows = await db().stage.findMany({ where: { pipelineId: { in: ids.map(BigInt) } } });
  return ids.map((id) => rows.find((r) => Number(r.pipelineId) === id)!);
}

const statusesOf = async (ids: readonly number[]) => (await stagesOf(ids)).map((s) => s.status);
const count = (list: readonly string[], status: string) => list.filter((s) => s === status).length;

/** Completes each Pending stage of the pipelines as a worker would (lease, then result), in one batch. */
async function complete(ids: readonly number[], on = engine(), app = applicationId): Promise<void> {
  const stages = (await stagesOf(ids)).filter((s) => s.status === 'Pending');
  await db().$executeRaw`UPDATE stages SET status = 'Running', attempt = 1 WHERE id = ANY(${stages.map((s) => s.id)}::bigint[])`;
  await db().$executeRaw`
    UPDATE stage_executions SET attempt = 1, lease_owner = 'w', leased_at = now(), lease_expires_at = now() + interval '60 seconds'
    WHERE id = ANY(${stages.map((s) => s.currentExecutionId!)}::uuid[])`;
  await on.run(
    stages.map((s) => ({
      kind: 'result' as const,
      pipelineId: Number(s.pipelineId),
      message: {
        applicationId: app,
        stageId: Number(s.id),
        pipelineId: Number(s.pipelineId),
        workerId: 'w',
        receivedAt: new Date().toISOString(),
        result: { stageId: Number(s.id), executionId: s.currentExecutionId!, attempt: 1, isSuccess: true, result: 'ok' },
      },
    })),
  );
}

/** The handler's StageNext messages in the order BullMQ hands them out. */
async function deliveryOrder(handler: string): Promise<StageNextJob[]> {
  const queue = new Queue(stageNextBullName(`app_${applicationId}_${handler}_StageNext`), { connection: redis, prefix });
  try {
    const jobs = await queue.getJobs(['prioritized', 'waiting'], 0, -1, true);
    return jobs.flatMap((j) => (j.name === STAGE_NEXT_BATCH_JOB ? (j.data as StageNextBatchJob).batch : [j.data as StageNextJob]));
  } finally {
    await queue.close();
  }
}

describe('concurrency keys', () => {
  it('a key never has more Pending + Running stages than its limit; a freed slot goes to its oldest waiting stage', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i += 1) ids.push(await create('fc-key', { concurrencyKey: 'customer-1', concurrencyLimit: 2 }));
    // One pass per pipeline, as creations arrive.
    for (const id of ids) await pass([id]);
    expect(await statusesOf(ids)).toEqual(['Pending', 'Pending', 'Throttled', 'Throttled', 'Throttled']);
    await complete([ids[0]!]);
    // The result's own batch admitted the key's oldest Throttled stage, in another pipeline.
    expect(await statusesOf(ids)).toEqual(['Completed', 'Pending', 'Pending', 'Throttled', 'Throttled']);
  });

  it('two engines passing at once never exceed the limit', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 24; i += 1) ids.push(await create('fc-race', { concurrencyKey: 'tenant', concurrencyLimit: 3 }));
    await Promise.all(ids.map((id, i) => pass([id], engines[i % 2]!)));
    const statuses = await statusesOf(ids);
    expect(count(statuses, 'Pending')).toBe(3);
    expect(count(statuses, 'Throttled')).toBe(21);
  });

  it('different keys do not limit each other, and stages without a key are not limited', async () => {
    const a = await create('fc-keys', { concurrencyKey: 'a' });
    const b = await create('fc-keys', { concurrencyKey: 'b' });
    const a2 = await create('fc-keys', { concurrencyKey: 'a' });
    const free = await create('fc-keys');
    await pass([a, b, a2, free]);
    expect(await statusesOf([a, b, a2, free])).toEqual(['Pending', 'Pending', 'Throttled', 'Pending']);
  });

  it("a key's in-flight row follows its stages through every move, and always equals a count of them", async () => {
    // The engine reads a key's load from concurrency_keys (decision 0135), kept by triggers on stages.
    const counted = async () => {
      const [row] = await db().$queryRaw<{ kept: number | null; counted: number }[]>`
        SELECT (SELECT in_flight FROM concurrency_keys WHERE application_id = ${applicationId} AND key = 'counted') AS kept,
               (SELECT count(*)::int FROM stages WHERE application_id = ${applicationId} AND concurrency_key = 'counted'
                  AND status IN ('Pending', 'Running')) AS counted`;
      return row!;
    };
    const ids: number[] = [];
    for (let i = 0; i < 6; i += 1) ids.push(await create('fc-counted', { concurrencyKey: 'counted', concurrencyLimit: 3 }));
    expect(await counted()).toEqual({ kept: null, counted: 0 });
    await pass(ids);
    expect(await counted()).toEqual({ kept: 3, counted: 3 });
    // A lease (Pending -> Running) leaves the count; a result frees one and admits the next.
    await complete([ids[0]!]);
    expect(await statusesOf(ids)).toEqual(['Completed', 'Pending', 'Pending', 'Pending', 'Throttled', 'Throttled']);
    expect(await counted()).toEqual({ kept: 3, counted: 3 });
    // Moves by any statement count, not only the engine's: a stage cancelled, one put back, one deleted.
    await db().$executeRaw`UPDATE stages SET status = 'Cancelled' WHERE pipeline_id = ${BigInt(ids[1]!)}`;
    expect(await counted()).toEqual({ kept: 2, counted: 2 });
    await db().$executeRaw`UPDATE stages SET status = 'Running' WHERE pipeline_id = ${BigInt(ids[1]!)}`;
    expect(await counted()).toEqual({ kept: 3, counted: 3 });
    await db().$executeRaw`UPDATE stages SET status = 'Cancelled' WHERE pipeline_id = ${BigInt(ids[1]!)}`;
    await db().$executeRaw`DELETE FROM stage_executions WHERE stage_id IN (SELECT id FROM stages WHERE pipeline_id = ${BigInt(ids[2]!)})`;
    await db().$executeRaw`DELETE FROM stage_logs WHERE pipeline_id = ${BigInt(ids[2]!)}`;
    await db().$executeRaw`DELETE FROM stages WHERE pipeline_id = ${BigInt(ids[2]!)}`;
    expect(await counted()).toEqual({ kept: 1, counted: 1 });
    // The two freed slots went unused (no engine pass saw them): the next pass admits into them.
    await pass(ids.slice(4));
    expect(await counted()).toEqual({ kept: 3, counted: 3 });
    await complete(ids.slice(3));
    expect(await counted()).toEqual({ kept: 0, counted: 0 });
  });
});

/**
 * An application of its own under APP_MAX_ACTIVE_STAGES `cap`, the shared limit held at dispatch
 * (a handler's maxConcurrent is its queue's, below): its engine and the helpers bound to it.
 */
async function cappedApplication(name: string, cap: number) {
  const app = (await db().application.create({ data: { name } })).id;
  const capped = new Engine({ ...deps, maxActiveStages: cap });
  return {
    create: (handler: string, options: StageOptionsInput = {}, pipeline: Partial<PipelineDefinitionInput> = {}) => create(handler, options, pipeline, app),
    pass: (ids: readonly number[]) => pass(ids, capped),
    complete: (ids: readonly number[]) => complete(ids, capped, app),
  };
}

describe('fair share (keys take turns for a shared limit)', () => {
  it('a flooding key does not hold back small keys: freed slots go one per key', async () => {
    const capped = await cappedApplication('flow-fair', 4);
    const flood: number[] = [];
    for (let i = 0; i < 12; i += 1) flood.push(await capped.create('fc-fair', { concurrencyKey: 'fair-big', concurrencyLimit: 100 }));
    await capped.pass(flood);
    expect(count(await statusesOf(flood), 'Pending')).toBe(4);
    const small: number[] = [];
    for (const key of ['fair-a', 'fair-b', 'fair-c']) for (let i = 0; i < 2; i += 1) small.push(await capped.create('fc-fair', { concurrencyKey: key, concurrencyLimit: 100 }));
    await capped.pass(small);
    expect(count(await statusesOf(small), 'Throttled')).toBe(6);
    await capped.complete(flood);
    // Four slots freed: each small key got one turn, the flood one (strict FIFO would give all four to the flood).
    const admitted = (await stagesOf([...flood, ...small])).filter((s) => s.status === 'Pending').map((s) => (s.options as { concurrencyKey: string }).concurrencyKey);
    expect(admitted.sort()).toEqual(['fair-a', 'fair-b', 'fair-big', 'fair-c']);
  });
});

describe('priorities', () => {
  it('a lower priority number takes a freed slot first, before older stages', async () => {
    const capped = await cappedApplication('flow-prio', 1);
    const blocker = await capped.create('fc-prio');
    await capped.pass([blocker]);
    const low = await capped.create('fc-prio', {}, { priority: 5 });
    const normal = await capped.create('fc-prio');
    const urgent = await capped.create('fc-prio', { priority: 1 });
    await capped.pass([low, normal, urgent]);
    expect(await statusesOf([low, normal, urgent])).toEqual(['Throttled', 'Throttled', 'Throttled']);
    await capped.complete([blocker]);
    expect(await statusesOf([low, normal, urgent])).toEqual(['Throttled', 'Throttled', 'Pending']);
    await capped.complete([urgent]);
    expect(await statusesOf([low, normal])).toEqual(['Throttled', 'Pending']);
  });

  it('with no limit, the StageNext queue hands out lower priority numbers first, then keys in turns of eight', async () => {
    const low = await create('fc-order', {}, { priority: 4 });
    await pass([low]);
    const big: number[] = [];
    for (let i = 0; i < 10; i += 1) big.push(await create('fc-order', { concurrencyKey: 'order-big', concurrencyLimit: 20 }));
    await pass(big);
    const small = await create('fc-order', { concurrencyKey: 'order-small', concurrencyLimit: 20 });
    await pass([small]);
    const urgent = await create('fc-order', { priority: 2 });
    await pass([urgent]);
    const pipelineOrder = (await deliveryOrder('fc-order')).map((m) => m.pipelineId);
    // The big key's first eight share its first turn (and could go as one batch job); the small
    // key's first stage comes before the big key's ninth, however late it arrived.
    expect(pipelineOrder).toEqual([urgent, ...big.slice(0, 8), small, ...big.slice(8), low]);
  });
});

describe("a handler's settings", () => {
  it('a paused handler dispatches nothing; resumed, its waiting stages go', async () => {
    await settings('fc-pause', { paused: true });
    const ids = [await create('fc-pause'), await create('fc-pause')];
    const other = await create('fc-pause-other');
    await pass([...ids, other]);
    expect(await statusesOf([...ids, other])).toEqual(['Throttled', 'Throttled', 'Pending']);
    await settings('fc-pause', { paused: false });
    await pass([ids[0]!]);
    // One pass admits the application's other waiting stages too.
    expect(await statusesOf(ids)).toEqual(['Pending', 'Pending']);
  });

  it("maxConcurrent is not held at dispatch but by the handler's queue places: its stages go Pending, and wait there in priority order", async () => {
    await settings('fc-max', { maxConcurrent: 2 });
    const ids: number[] = [];
    for (let i = 0; i < 4; i += 1) ids.push(await create('fc-max'));
    const urgent = await create('fc-max', { priority: 1 });
    await pass([...ids, urgent]);
    expect(await statusesOf([...ids, urgent])).toEqual(['Pending', 'Pending', 'Pending', 'Pending', 'Pending']);
    const order = (await deliveryOrder('fc-max')).map((m) => m.pipelineId);
    expect(order).toEqual([urgent, ...ids]);
  });

  it('maxPerSecond: one second of burst, then the bucket refills, and a wake-up is asked for the next token', async () => {
    await settings('fc-rate', { maxPerSecond: 2 });
    const ids: number[] = [];
    for (let i = 0; i < 8; i += 1) ids.push(await create('fc-rate'));
    await pass(ids);
    expect(count(await statusesOf(ids), 'Pending')).toBe(2);
    // A waiting pipeline's next pass is due when the next token is (0.5 s at 2/s).
    const due = await db().pipeline.findMany({ where: { id: { in: ids.map(BigInt) }, dispatchRequestedAt: { not: null } } });
    expect(due.length).toBeGreaterThanOrEqual(1);
    const wait = due[0]!.dispatchRequestedAt!.getTime() - Date.now();
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(600);
    await new Promise((r) => setTimeout(r, 1100));
    await pass(ids);
    expect(count(await statusesOf(ids), 'Pending')).toBe(4);
  });
});
