// Retention of terminal pipelines and their children (issue 10 item 6, decision 0083), over real
// PostgreSQL and Redis: what is deleted, what is kept, and how the engine meets a deleted pipeline.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteExpiredPipelines, readPipeline, sqlOf } from '@po/db';
import { createPipeline } from '@po/engine';
import { planPipeline } from '@po/domain';
import { Engine } from '@po/engine';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  type StageNextPublisher,
  type StageResultMessage,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import {
  TEST_REDIS_URL,
  cleanupRedisPrefix,
  createTestDatabase,
  testQueuePrefix,
  type TestDatabase,
} from '@po/testing';
import { retentionRound, type RetentionDeps, type RetentionOptions } from './cleanup.js';

let database: TestDatabase;
let engine: Engine;
let publisher: StageNextPublisher;
let deps: RetentionDeps;
let applicationId: number;
const prefix = testQueuePrefix('retention');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const quiet = createLogger({
  service: 'pipeline-service',
  destination: new Writable({ write: (_c, _e, done) => done() }),
});
/** Only the pipelines family: the others have their own test file. */
const options: RetentionOptions = {
  days: { pipelines: 30, workerEvents: 0, workerSessions: 0, scheduleRuns: 0, systemLogs: 0 },
  batchSize: 500,
  intervalMs: 60_000,
};

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'retention' } })).id;
  publisher = createStageNextPublisher(redis, prefix);
  engine = new Engine({
    db: database.db,
    publisher,
    events: createPipelineEventsProducer(redis, prefix),
    logger: quiet,
    random: () => 0.5,
    maxActiveStages: 0,
  });
  deps = { db: database.db, logger: quiet, clock: () => new Date() };
});

afterAll(async () => {
  await publisher.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

const db = () => database.db;
const sql = () => sqlOf(database.db);

interface Seeded {
  id: number;
  stageId: number;
  executionId: string;
  key: string;
}

/**
 * A pipeline as the product makes one: created with an idempotency key, context and keywords,
 * dispatched, leased, and ended by a result carrying `logs` log lines; then its end moved
 * `endedDaysAgo` days back.
 */
async function finished(
  endedDaysAgo: number,
  options: { logs?: number; scheduleId?: number; fail?: boolean; concurrencyKey?: string } = {},
): Promise<Seeded> {
  const key = `key-${randomUUID()}`;
  const stageOptions = options.concurrencyKey ? { options: { concurrencyKey: options.concurrencyKey } } : {};
  const planned = planPipeline(
    {
      name: 'old',
      stages: [{ stageName: 'a', stageHandlerName: 'retention', ...stageOptions }],
      pipelineContextItems: [{ key: 'ctx', value: 'v' }],
      pipelineKeywords: [{ key: 'kw', value: 'v' }],
    },
    {
      applicationId,
      idempotencyKey: key,
      ...(options.scheduleId ? { scheduleId: options.scheduleId } : {}),
    },
  );
  if (!planned.ok) throw new Error('invalid');
  const created = await createPipeline(sql(), planned.pipeline, new Date(), 'a'.repeat(64));
  const id = created!.id;
  await engine.run([{ kind: 'pass', pipelineId: id }]);
  const [lease] = await db().$queryRaw<{ id: bigint; execution_id: string }[]>`
    UPDATE stages SET status = 'Running', attempt = 1 WHERE pipeline_id = ${BigInt(id)} AND status = 'Pending'
    RETURNING id, current_execution_id::text AS execution_id`;
  await db().$executeRaw`
    UPDATE stage_executions SET attempt = 1, lease_owner = 'w', leased_at = now(), lease_expires_at = now() + interval '60 seconds'
    WHERE id = ${lease!.execution_id}::uuid`;
  const seeded = { id, stageId: Number(lease!.id), executionId: lease!.execution_id, key };
  const logs = Array.from({ length: options.logs ?? 2 }, (_, i) => ({ message: `line ${i}` }));
  const [outcome] = await engine.run([
    resultItem(seeded, { logs, isSuccess: !options.fail, retryable: false }),
  ]);
  expect(outcome).toMatchObject({ kind: 'result', decision: { applied: true } });
  await db()
    .$executeRaw`UPDATE pipelines SET finished_at = now() - make_interval(days => ${endedDaysAgo}) WHERE id = ${BigInt(id)}`;
  return seeded;
}

function resultItem(
  p: Seeded,
  extra: Partial<StageResultMessage['result']> = {},
  pipelineId: number = p.id,
) {
  return {
    kind: 'result' as const,
    pipelineId,
    message: {
      applicationId,
      stageId: p.stageId,
      ...(pipelineId > 0 ? { pipelineId } : {}),
      workerId: 'w',
      receivedAt: new Date().toISOString(),
      result: {
        stageId: p.stageId,
        executionId: p.executionId,
        attempt: 1,
        isSuccess: true,
        ...extra,
      },
    },
  };
}

/** Rows of the pipeline and of each of its children. */
async function rowsOf(p: Seeded) {
  const id = BigInt(p.id);
  const [counts] = await db().$queryRaw<Record<string, number>[]>`
    SELECT (SELECT count(*) FROM pipelines WHERE id = ${id})::int AS pipelines,
           (SELECT count(*) FROM stages WHERE pipeline_id = ${id})::int AS stages,
           (SELECT count(*) FROM stage_executions WHERE stage_id = ${BigInt(p.stageId)})::int AS stage_executions,
           (SELECT count(*) FROM stage_logs WHERE pipeline_id = ${id})::int AS stage_logs,
           (SELECT count(*) FROM context_items WHERE pipeline_id = ${id})::int AS context_items,
           (SELECT count(*) FROM pipeline_keywords WHERE pipeline_id = ${id})::int AS pipeline_keywords,
           (SELECT count(*) FROM idempotency_keys WHERE pipeline_id = ${id})::int AS idempotency_keys`;
  return counts!;
}

const ALL_GONE = {
  pipelines: 0,
  stages: 0,
  stage_executions: 0,
  stage_logs: 0,
  context_items: 0,
  pipeline_keywords: 0,
  idempotency_keys: 0,
};
const ALL_THERE = {
  pipelines: 1,
  stages: 1,
  stage_executions: 1,
  stage_logs: 2,
  context_items: 1,
  pipeline_keywords: 1,
  idempotency_keys: 1,
};

describe('retention of terminal pipelines (RETENTION_PIPELINES_DAYS)', () => {
  it('deletes a terminal pipeline that ended longer ago than the setting, with every child row; keeps one that ended recently', async () => {
    const old = await finished(31);
    const oldFailed = await finished(45, { fail: true });
    const recent = await finished(29);
    expect(await rowsOf(old)).toEqual(ALL_THERE);

    const report = await retentionRound(deps, options);

    expect(await rowsOf(old)).toEqual(ALL_GONE);
    expect(await rowsOf(oldFailed)).toEqual(ALL_GONE);
    expect(await rowsOf(recent)).toEqual(ALL_THERE);
    expect(report.get('pipelines')?.deleted).toMatchObject({
      pipelines: 2,
      stages: 2,
      stage_executions: 2,
      stage_logs: 4,
      idempotency_keys: 2,
    });
  });

  it('never deletes a pipeline that is not terminal, however old', async () => {
    const planned = planPipeline(
      { name: 'live', stages: [{ stageName: 'a', stageHandlerName: 'live' }] },
      { applicationId },
    );
    if (!planned.ok) throw new Error('invalid');
    const live = (await createPipeline(sql(), planned.pipeline, new Date()))!.id;
    // Old in every column the rule could look at, but Running.
    await db().$executeRaw`
      UPDATE pipelines SET status = 'Running', created_at = now() - interval '400 days', updated_at = now() - interval '400 days',
        finished_at = now() - interval '400 days' WHERE id = ${BigInt(live)}`;
    await retentionRound(deps, options);
    expect(await db().pipeline.count({ where: { id: BigInt(live) } })).toBe(1);
    expect(await db().stage.count({ where: { pipelineId: BigInt(live) } })).toBe(1);
  });

  it("a concurrency key's count row goes with its deleted stages when none of the key is in flight; a key in flight keeps it", async () => {
    const idle = `idle-${randomUUID()}`;
    const busy = `busy-${randomUUID()}`;
    await finished(40, { concurrencyKey: idle });
    await finished(40, { concurrencyKey: busy });
    const planned = planPipeline(
      { name: 'live', stages: [{ stageName: 'a', stageHandlerName: 'live', options: { concurrencyKey: busy } }] },
      { applicationId },
    );
    if (!planned.ok) throw new Error('invalid');
    const live = (await createPipeline(sql(), planned.pipeline, new Date()))!.id;
    await engine.run([{ kind: 'pass', pipelineId: live }]);
    const rows = () =>
      db().$queryRaw<{ key: string; in_flight: number }[]>`
        SELECT key, in_flight FROM concurrency_keys WHERE application_id = ${applicationId} AND key IN (${idle}, ${busy}) ORDER BY key DESC`;
    expect(await rows()).toEqual([
      { key: idle, in_flight: 0 },
      { key: busy, in_flight: 1 },
    ]);

    await retentionRound(deps, options);

    expect(await rows()).toEqual([{ key: busy, in_flight: 1 }]);
  });

  it('a deleted pipeline reads as not found, and a late result or expiry for its execution is dropped, not applied or thrown', async () => {
    const gone = await finished(60);
    await retentionRound(deps, options);
    expect(await readPipeline(sql(), gone.id)).toBeNull();

    const outcomes = await engine.run([
      resultItem(gone),
      // A message queued before results carried their pipeline.
      resultItem(gone, {}, 0),
      { kind: 'expiry', pipelineId: gone.id, stageId: gone.stageId, executionId: gone.executionId },
      { kind: 'pass', pipelineId: gone.id },
    ]);
    expect(outcomes).toEqual([
      { kind: 'result', decision: { applied: false, reason: 'unknown_stage' } },
      { kind: 'result', decision: { applied: false, reason: 'unknown_stage' } },
      { kind: 'skipped' },
      { kind: 'skipped' },
    ]);
  });

  it('its idempotency key is free again: the same key creates a new pipeline', async () => {
    const gone = await finished(60);
    await retentionRound(deps, options);
    const planned = planPipeline(
      { name: 'again', stages: [{ stageName: 'a', stageHandlerName: 'again' }] },
      { applicationId, idempotencyKey: gone.key },
    );
    if (!planned.ok) throw new Error('invalid');
    const again = await createPipeline(sql(), planned.pipeline, new Date(), 'b'.repeat(64));
    expect(again?.id).toBeGreaterThan(gone.id);
  });

  it("keeps the pipelines of a schedule's newest 20 runs (its health reads them); an older run's pipeline goes and the run stays, unlinked", async () => {
    const schedule = await db().schedule.create({
      data: {
        applicationId,
        name: 'nightly',
        nameKey: 'nightly',
        kind: 'Interval',
        intervalSeconds: 3600,
        definition: {},
        planAnchor: new Date(),
      },
    });
    const oldest = await finished(90, { scheduleId: Number(schedule.id) });
    const newest = await finished(90, { scheduleId: Number(schedule.id) });
    const run = (pipelineId: number | null, i: number) => ({
      scheduleId: schedule.id,
      applicationId,
      trigger: 'Scheduled',
      status: pipelineId === null ? 'Skipped' : 'Created',
      scheduledFor: new Date(Date.now() - (30 - i) * 3_600_000),
      tick: new Date(Date.now() - (30 - i) * 3_600_000),
      pipelineId: pipelineId === null ? null : BigInt(pipelineId),
    });
    // Run 0 names `oldest`; runs 1..19 have no pipeline; run 20 names `newest`: 21 runs in all.
    await db().scheduleRun.createMany({
      data: [
        run(oldest.id, 0),
        ...Array.from({ length: 19 }, (_, i) => run(null, i + 1)),
        run(newest.id, 20),
      ],
    });

    await retentionRound(deps, options);

    expect(await rowsOf(oldest)).toEqual(ALL_GONE);
    expect(await rowsOf(newest)).toEqual(ALL_THERE);
    const runs = await db().scheduleRun.findMany({
      where: { scheduleId: schedule.id },
      orderBy: { id: 'asc' },
    });
    expect(runs).toHaveLength(21);
    expect(runs[0]).toMatchObject({ status: 'Created', pipelineId: null });
    expect(runs[20]!.pipelineId).toBe(BigInt(newest.id));
  });
});

describe('pipeline batches (RETENTION_BATCH_SIZE)', () => {
  it('a batch takes at most the batch size of pipelines; a round repeats full batches until one comes back short', async () => {
    await retentionRound(deps, options);
    const seeded = [];
    // Without log lines: those are counted against the batch on their own (next test).
    for (let i = 0; i < 5; i++) seeded.push(await finished(40 + i, { logs: 0 }));

    const first = await deleteExpiredPipelines(sql(), new Date(Date.now() - 30 * 86_400_000), 2);
    expect(first).toMatchObject({ taken: 2, deleted: { pipelines: 2 } });
    // Oldest first.
    expect((await rowsOf(seeded[4]!)).pipelines).toBe(0);
    expect((await rowsOf(seeded[3]!)).pipelines).toBe(0);
    expect((await rowsOf(seeded[2]!)).pipelines).toBe(1);

    const report = await retentionRound(deps, { ...options, batchSize: 2 });
    // 3 left: a full batch of 2, then a short one of 1; then the family's second step, old
    // webhook deliveries (none here), one short batch.
    expect(report.get('pipelines')).toEqual({
      deleted: expect.objectContaining({ pipelines: 3 }),
      batches: 3,
    });
  });

  it('stage logs that fill a batch are deleted alone, the pipeline in a later batch', async () => {
    await retentionRound(deps, options);
    const chatty = await finished(40, { logs: 5 });
    const cutoff = new Date(Date.now() - 30 * 86_400_000);

    expect(await deleteExpiredPipelines(sql(), cutoff, 3)).toEqual({
      deleted: { stage_logs: 3 },
      taken: 3,
    });
    expect(await rowsOf(chatty)).toMatchObject({ pipelines: 1, stages: 1, stage_logs: 2 });

    expect(await deleteExpiredPipelines(sql(), cutoff, 3)).toMatchObject({
      deleted: { stage_logs: 2, pipelines: 1 },
      taken: 1,
    });
    expect(await rowsOf(chatty)).toEqual(ALL_GONE);
  });
});
