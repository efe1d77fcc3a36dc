// The engine (decision 0061): results, expiries and dispatcher passes as one batched transaction
// over real PostgreSQL and Redis (addendum §7–§13).
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOf } from '@po/db';
import { insertPipeline } from './steps/create.js';
import { planPipeline, type PipelineDefinitionInput } from '@po/domain';
import {
  STAGE_NEXT_BATCH_JOB,
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  stageNextBullName,
  type StageNextBatchJob,
  type StageNextJob,
  type StageResultMessage,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { Engine, type EngineDeps } from './engine.js';
import { writePass } from './store.js';

let database: TestDatabase;
let deps: EngineDeps;
let engine: Engine;
let applicationId: number;
const prefix = testQueuePrefix('engine');
const redis = createRedis(TEST_REDIS_URL, 'producer');

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'engine' } })).id;
  deps = {
    db: database.db,
    publisher: createStageNextPublisher(redis, prefix),
    events: createPipelineEventsProducer(redis, prefix),
    logger: createLogger({ service: 'engine', destination: new Writable({ write: (_c, _e, done) => done() }) }),
    random: () => 0.5,
    maxActiveStages: 0,
  };
  engine = new Engine(deps);
});

afterAll(async () => {
  await deps.publisher.close();
  await deps.events.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

const db = () => database.db;

async function create(definition: PipelineDefinitionInput): Promise<number> {
  const planned = planPipeline(definition, { applicationId });
  if (!planned.ok) throw new Error('invalid');
  return db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
}

/** The current executions of a pipeline's Pending stages, leased as a worker's acquire would. */
async function lease(pipelineId: number): Promise<{ stageId: number; executionId: string }[]> {
  const rows = await db().$queryRaw<{ id: bigint; current_execution_id: string }[]>`
    UPDATE stages SET status = 'Running', attempt = attempt + 1 WHERE pipeline_id = ${BigInt(pipelineId)} AND status = 'Pending'
    RETURNING id, current_execution_id::text AS current_execution_id`;
  await db().$executeRaw`
    UPDATE stage_executions SET attempt = 1, lease_owner = 'w', leased_at = now(), lease_expires_at = now() + interval '60 seconds'
    WHERE id = ANY(${rows.map((r) => r.current_execution_id)}::uuid[])`;
  return rows.map((r) => ({ stageId: Number(r.id), executionId: r.current_execution_id }));
}

const result = (pipelineId: number, s: { stageId: number; executionId: string }, extra: Partial<StageResultMessage['result']> = {}) => ({
  kind: 'result' as const,
  pipelineId,
  message: {
    applicationId,
    stageId: s.stageId,
    pipelineId,
    workerId: 'w',
    receivedAt: new Date().toISOString(),
    result: { stageId: s.stageId, executionId: s.executionId, attempt: 1, isSuccess: true, result: 'out', ...extra },
  },
});

const stagesOf = (pipelineId: number) => db().stage.findMany({ where: { pipelineId: BigInt(pipelineId) }, orderBy: { position: 'asc' } });
const executionsOf = (pipelineId: number) => db().stageExecution.findMany({ where: { stage: { pipelineId: BigInt(pipelineId) } } });
/** The waiting messages of a handler's queue: a batch job (several dispatched together) carries several. */
const messagesOf = (jobs: Job[]): { id: string; data: StageNextJob }[] =>
  jobs.flatMap((j) => (j.name === STAGE_NEXT_BATCH_JOB ? (j.data as StageNextBatchJob).batch.map((data) => ({ id: data.executionId, data })) : [{ id: j.id!, data: j.data as StageNextJob }]));
const waiting = async (handler: string) => {
  const queue = new Queue(stageNextBullName(`app_${applicationId}_${handler}_StageNext`), { connection: redis, prefix });
  const jobs = await queue.getJobs(['waiting', 'prioritized']);
  await queue.close();
  return messagesOf(jobs);
};

describe('the engine (addendum §9, §12, §13)', () => {
  it('applies a result and dispatches the stage it made ready in the same transaction, then publishes it', async () => {
    const id = await create({ name: 'chain', stages: [{ stageName: 'a', stageHandlerName: 'chain' }, { stageName: 'b', stageHandlerName: 'chain', input: 'in-b' }] });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [a] = await lease(id);
    const [outcome] = await engine.run([result(id, a!)]);
    expect(outcome).toMatchObject({ kind: 'result', decision: { applied: true, outcome: 'completed' } });
    const [sa, sb] = await stagesOf(id);
    expect(sa).toMatchObject({ status: 'Completed', output: 'out' });
    expect(sb!.status).toBe('Pending');
    const b = (await executionsOf(id)).find((e) => e.stageId === sb!.id)!;
    expect(sb!.currentExecutionId).toBe(b.id);
    // Published before the commit: a committed dispatch always has its message.
    const jobs = await waiting('chain');
    const job = jobs.find((j) => j.id === b.id)!;
    expect(job.data).toMatchObject({ pipelineId: id, stageId: Number(sb!.id), stageName: 'b', input: 'in-b', executionId: b.id, previousAttempts: 0 });
    expect(Date.parse(job.data.dispatchedAt)).toBeGreaterThanOrEqual(b.dispatchedAt.getTime());
    expect((await db().pipeline.findUniqueOrThrow({ where: { id: BigInt(id) } })).status).toBe('Running');
  });

  it('a batch of results over many pipelines applies each once, fences duplicates, and dispatches each next stage once', async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => create({ name: `many-${i}`, stages: [{ stageName: 'a', stageHandlerName: 'many' }, { stageName: 'b', stageHandlerName: 'many' }] })));
    await engine.run(ids.map((pipelineId) => ({ kind: 'pass', pipelineId })));
    const running = await Promise.all(ids.map(async (id) => ({ id, s: (await lease(id))[0]! })));
    // Every result twice, in one batch: the second copy meets the first one's effect.
    const items = running.flatMap(({ id, s }) => [result(id, s), result(id, s)]);
    const outcomes = await engine.run(items);
    const applied = outcomes.filter((o) => o.kind === 'result' && o.decision.applied);
    expect(applied).toHaveLength(20);
    expect(outcomes.filter((o) => o.kind === 'result' && !o.decision.applied).map((o) => o.kind === 'result' && !o.decision.applied && o.decision.reason)).toEqual(
      Array(20).fill('stage_not_running'),
    );
    for (const id of ids) {
      const [a, b] = await stagesOf(id);
      expect([a!.status, b!.status]).toEqual(['Completed', 'Pending']);
      expect((await executionsOf(id)).filter((e) => e.stageId === b!.id)).toHaveLength(1);
    }
  });

  it('concurrent batches over the same pipelines, in any order, never deadlock and dispatch a join once', async () => {
    // Two independent branches and their join: left and right both ready at once.
    const branched = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        create({
          name: `branch-${i}`,
          stages: [
            { stageName: 'root', stageHandlerName: 'join' },
            { stageName: 'left', stageHandlerName: 'join', options: { dependsOn: ['root'] } },
            { stageName: 'right', stageHandlerName: 'join', options: { dependsOn: ['root'] } },
            { stageName: 'join', stageHandlerName: 'join', options: { dependsOn: ['left', 'right'] } },
          ],
        }),
      ),
    );
    await engine.run(branched.map((pipelineId) => ({ kind: 'pass', pipelineId })));
    for (const id of branched) await engine.run([result(id, (await lease(id))[0]!)]);
    const branches = await Promise.all(branched.map(async (id) => ({ id, s: await lease(id) })));
    expect(branches.every((b) => b.s.length === 2)).toBe(true);
    // Batch one takes every left result in pipeline order, batch two every right one in reverse.
    const left = branches.map((b) => result(b.id, b.s[0]!));
    const right = branches.map((b) => result(b.id, b.s[1]!)).reverse();
    const [l, r] = await Promise.all([engine.run(left), engine.run(right)]);
    expect([...l, ...r].every((o) => o.kind === 'result' && o.decision.applied)).toBe(true);
    for (const id of branched) {
      const stages = await stagesOf(id);
      expect(stages.map((s) => s.status)).toEqual(['Completed', 'Completed', 'Completed', 'Pending']);
      expect((await executionsOf(id)).filter((e) => e.stageId === stages[3]!.id)).toHaveLength(1);
    }
  });

  it('ends an expired lease by the database clock and schedules the retry; an unexpired one is left alone', async () => {
    const id = await create({ name: 'expiry', stages: [{ stageName: 'a', stageHandlerName: 'expiry', options: { maxRetries: 1, retryInterval: 30 } }] });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [s] = await lease(id);
    const fresh = await engine.run([{ kind: 'expiry', pipelineId: id, stageId: s!.stageId, executionId: s!.executionId }]);
    expect(fresh).toEqual([{ kind: 'expiry', expired: false }]);
    expect((await stagesOf(id))[0]!.status).toBe('Running');

    await db().$executeRaw`UPDATE stage_executions SET lease_expires_at = now() - interval '1 second' WHERE id = ${s!.executionId}::uuid`;
    const [out] = await engine.run([{ kind: 'expiry', pipelineId: id, stageId: s!.stageId, executionId: s!.executionId }]);
    expect(out).toMatchObject({ kind: 'expiry', expired: true, code: 'LEASE_EXPIRED', outcome: 'retry_scheduled' });
    const [stage] = await stagesOf(id);
    expect(stage).toMatchObject({ status: 'RetryScheduled', lastErrorCode: 'LEASE_EXPIRED', retryAttempt: 1, failureCount: 1 });
    expect(stage!.nextRetryAt!.getTime() - stage!.lastFailedAt!.getTime()).toBe(30_000);
    const execution = await db().stageExecution.findUniqueOrThrow({ where: { id: s!.executionId } });
    expect(execution).toMatchObject({ endReason: 'LEASE_EXPIRED' });
    const logs = await db().stageLog.findMany({ where: { stageId: BigInt(s!.stageId) } });
    expect(logs.map((l) => [l.logLevel, l.message])).toEqual([['Warning', `Execution ${s!.executionId} attempt 1 failed: LEASE_EXPIRED`]]);
    expect((await db().pipeline.findUniqueOrThrow({ where: { id: BigInt(id) } })).dispatchRequestedAt?.getTime()).toBe(stage!.nextRetryAt!.getTime());
  });

  it('the write ends an execution as expired only while it still is (a renewal after the read wins)', async () => {
    const id = await create({ name: 'renewed', stages: [{ stageName: 'a', stageHandlerName: 'renewed' }] });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [s] = await lease(id);
    const [{ now }] = (await db().$queryRaw<{ now: Date }[]>`SELECT now() AS now`) as [{ now: Date }];
    const written = await sqlOf(db()).transaction((tx) =>
      writePass(tx, {
        now,
        stages: [],
        ended: [{ id: s!.executionId, reason: 'LEASE_EXPIRED' }],
        started: [],
        pipelines: [],
        logs: [],
        dispatchedStageIds: [],
        dispatchedPipelineIds: [],
      }),
    );
    expect(written.endedIds.has(s!.executionId)).toBe(false);
    expect((await db().stageExecution.findUniqueOrThrow({ where: { id: s!.executionId } })).endedAt).toBeNull();
  });

  it('skips a pipeline another transaction holds when asked to (the sweeper), and does not wait for it', async () => {
    const id = await create({ name: 'held', stages: [{ stageName: 'a', stageHandlerName: 'held' }] });
    let release!: () => void;
    const holding = sqlOf(db()).transaction(async (tx) => {
      await tx.query({ name: 'test_hold_pipeline', text: 'SELECT id FROM pipelines WHERE id = $1 FOR UPDATE' }, [id]);
      await new Promise<void>((r) => (release = r));
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await engine.run([{ kind: 'pass', pipelineId: id }], { skipLocked: true })).toEqual([{ kind: 'skipped' }]);
    release();
    await holding;
    expect(await engine.run([{ kind: 'pass', pipelineId: id }], { skipLocked: true })).toEqual([{ kind: 'pass' }]);
    expect((await stagesOf(id))[0]!.status).toBe('Pending');
  });

  it('publishes only after the commit: a worker that takes a message always finds its rows, and no broker call holds a lock', async () => {
    const id = await create({ name: 'visible', stages: [{ stageName: 'a', stageHandlerName: 'visible' }, { stageName: 'b', stageHandlerName: 'visible' }] });
    const seen: { status: string; executions: number; locked: boolean }[] = [];
    const watching = new Engine({
      ...deps,
      publisher: {
        ...deps.publisher,
        publish: async (queue, messages) => {
          // Another connection, as a worker-gateway's: the dispatch is committed and its rows are free.
          for (const m of messages) {
            const [row] = await db().$queryRaw<{ status: string; executions: number; locked: boolean }[]>`
              SELECT s.status::text AS status, (SELECT count(*)::int FROM stage_executions e WHERE e.id = ${m.executionId}::uuid) AS executions,
                     NOT EXISTS (SELECT 1 FROM stages x WHERE x.id = s.id FOR UPDATE SKIP LOCKED) AS locked
              FROM stages s WHERE s.id = ${m.stageId}`;
            seen.push(row!);
          }
          return deps.publisher.publish(queue, messages);
        },
      },
    });
    await watching.run([{ kind: 'pass', pipelineId: id }]);
    expect(seen).toEqual([{ status: 'Pending', executions: 1, locked: false }]);
  });

  it('a dispatch whose message cannot be published stands: the result is applied, and the lost message is republished from its row', async () => {
    const id = await create({ name: 'unpublished', stages: [{ stageName: 'a', stageHandlerName: 'unpublished' }, { stageName: 'b', stageHandlerName: 'unpublished' }] });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [a] = await lease(id);
    let tries = 0;
    const down = new Engine({
      ...deps,
      publisher: {
        ...deps.publisher,
        publish: () => {
          tries += 1;
          return Promise.reject(new Error('Redis is away'));
        },
      },
    });
    const [outcome] = await down.run([result(id, a!)]);
    expect(outcome).toMatchObject({ kind: 'result', decision: { applied: true } });
    expect(tries).toBeGreaterThan(1);
    const stages = await stagesOf(id);
    expect(stages.map((s) => s.status)).toEqual(['Completed', 'Pending']);
    const b = stages[1]!.currentExecutionId!;
    const published = async () => (await waiting('unpublished')).some((j) => j.data.executionId === b);
    expect(await published()).toBe(false);
    // The sweeper's lost-message walk finds it missing and republishes it (sweeper.int.test.ts).
    expect(await engine.republish(b, Number(stages[1]!.id))).toBe(true);
    expect(await published()).toBe(true);
  });

  it('a large context fanned out is written once, not copied into each message (decision 0121)', async () => {
    const value = 'v'.repeat(64 * 1024);
    const id = await create({
      name: 'fan-out',
      pipelineContextItems: Array.from({ length: 64 }, (_, i) => ({ key: `k${i}`, value, isSensitive: i === 0 })),
      stages: [
        { stageName: 'root', stageHandlerName: 'fan' },
        ...Array.from({ length: 99 }, (_, i) => ({ stageName: `leaf${i}`, stageHandlerName: 'fan', options: { dependsOn: ['root'] } })),
      ],
    });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [root] = await lease(id);
    await engine.run([result(id, root!)]);
    const leaves = (await waiting('fan')).filter((j) => j.data.stageName.startsWith('leaf'));
    expect(leaves).toHaveLength(99);
    const snapshots = await db().contextSnapshot.findMany({ where: { pipelineId: BigInt(id) } });
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]!.bytes).toBeGreaterThan(64 * 64 * 1024);
    for (const job of leaves) {
      expect(JSON.stringify(job.data).length).toBeLessThan(2048);
      expect(job.data).toMatchObject({ pipelineContextItems: [], contextSnapshotId: snapshots[0]!.id });
    }
    const items = JSON.parse(snapshots[0]!.items) as { key: string; value: string; isSensitive: boolean; isDeleted: boolean }[];
    expect(items).toHaveLength(64);
    expect(items[0]).toMatchObject({ key: 'k0', value, isSensitive: true, isDeleted: false });
  });

  it('a small context is still copied into the message', async () => {
    const id = await create({ name: 'small', pipelineContextItems: [{ key: 'region', value: 'eu' }], stages: [{ stageName: 'a', stageHandlerName: 'small' }] });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [job] = await waiting('small');
    const message = job!.data;
    expect(message).toMatchObject({ pipelineContextItems: [{ key: 'region', value: 'eu', isDeleted: false }] });
    expect(message).not.toHaveProperty('contextSnapshotId');
  });

  it('a result for an unknown stage or another application is not applied', async () => {
    const id = await create({ name: 'other', stages: [{ stageName: 'a', stageHandlerName: 'other' }] });
    await engine.run([{ kind: 'pass', pipelineId: id }]);
    const [s] = await lease(id);
    const foreign = result(id, s!);
    foreign.message.applicationId = applicationId + 1000;
    const missing = result(id, { stageId: 999_999_999, executionId: randomUUID() });
    const outcomes = await engine.run([foreign, missing]);
    expect(outcomes.map((o) => o.kind === 'result' && o.decision)).toEqual([
      { applied: false, reason: 'unknown_stage' },
      { applied: false, reason: 'unknown_stage' },
    ]);
    expect((await stagesOf(id))[0]!.status).toBe('Running');
  });
});

describe('APP_MAX_ACTIVE_STAGES (addendum §7)', () => {
  it('a freed slot goes to the application oldest Throttled stage, not to the next stage of the pipeline that freed it', async () => {
    const app = (await db().application.create({ data: { name: 'capped' } })).id;
    const capped = new Engine({ ...deps, maxActiveStages: 1 });
    const make = async (name: string, stages: number) => {
      const planned = planPipeline({ name, stages: Array.from({ length: stages }, (_, i) => ({ stageName: `s${i}`, stageHandlerName: 'cap' })) }, { applicationId: app });
      if (!planned.ok) throw new Error('invalid');
      return db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
    };
    const first = await make('first', 2);
    const second = await make('second', 1);
    await capped.run([{ kind: 'pass', pipelineId: first }]);
    await capped.run([{ kind: 'pass', pipelineId: second }]);
    expect((await stagesOf(second))[0]!.status).toBe('Throttled');
    const [running] = await lease(first);
    // The result frees the only slot; the first pipeline's next stage is younger than the Throttled one.
    const [outcome] = await capped.run([{ ...result(first, running!), message: { ...result(first, running!).message, applicationId: app } }]);
    expect(outcome).toMatchObject({ kind: 'result', decision: { applied: true } });
    expect((await stagesOf(second))[0]!.status).toBe('Pending');
    expect((await stagesOf(first)).map((s) => s.status)).toEqual(['Completed', 'Throttled']);
    expect(await db().stage.count({ where: { applicationId: app, status: { in: ['Pending', 'Running'] } } })).toBe(1);
  });

  it('a due retry Throttled at the cap shows no retry time any more (§7: nextRetryAt becomes null)', async () => {
    const app = (await db().application.create({ data: { name: 'capped-retry' } })).id;
    const capped = new Engine({ ...deps, maxActiveStages: 1 });
    const make = async (name: string) => {
      const planned = planPipeline({ name, stages: [{ stageName: 's', stageHandlerName: 'cap-retry' }] }, { applicationId: app });
      if (!planned.ok) throw new Error('invalid');
      return db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
    };
    const holder = await make('holder');
    const retried = await make('retried');
    await capped.run([{ kind: 'pass', pipelineId: holder }]);
    expect((await stagesOf(holder))[0]!.status).toBe('Pending');
    // A failed attempt whose retry is due now, while the application's only slot is taken.
    await db().$executeRaw`
      UPDATE stages SET status = 'RetryScheduled', retry_attempt = 1, failure_count = 1, failure_disposition = 'retryable',
        last_failed_at = now() - interval '2 seconds', next_retry_at = now() - interval '1 second'
      WHERE pipeline_id = ${BigInt(retried)}`;
    await db().$executeRaw`UPDATE pipelines SET dispatched = true, status = 'Pending' WHERE id = ${BigInt(retried)}`;
    await capped.run([{ kind: 'pass', pipelineId: retried }]);
    const [stage] = await stagesOf(retried);
    expect(stage).toMatchObject({ status: 'Throttled', retryAttempt: 1, nextRetryAt: null });
  });
});
