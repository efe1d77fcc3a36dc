import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPipeline } from '@po/engine';
import { grantLease, lockExecutionState, startExecutions } from '@po/engine';
import { planPipeline } from '@po/domain';
import { createPipelineEventsProducer, createRedis, createStageNextPublisher } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { createResultApplier, type ConsumerDeps, type ResultApplier } from './apply-result.js';

let database: TestDatabase;
let deps: ConsumerDeps;
let applier: ResultApplier;
const warnings: string[] = [];
const prefix = testQueuePrefix('rc');
const redis = createRedis(TEST_REDIS_URL, 'producer');

beforeAll(async () => {
  database = await createTestDatabase();
  const logger = createLogger({
    service: 'result-consumer',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        warnings.push(chunk.toString());
        done();
      },
    }),
  });
  deps = {
    db: database.db,
    publisher: createStageNextPublisher(redis, prefix),
    events: createPipelineEventsProducer(redis, prefix),
    logger,
    random: () => 0.5,
    maxActiveStages: 0,
  };
  applier = createResultApplier(deps, { maxBatch: 16, maxConcurrent: 2 });
});

afterAll(async () => {
  await deps.events.close();
  await deps.publisher.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

/** A pipeline whose first stage is Running under a granted lease, as after pull + acquire. */
async function runningStage(stages: { stageName: string; stageHandlerName: string; options?: Record<string, unknown> }[]) {
  const app = await database.db.application.create({ data: { name: 'rc' } });
  const planned = planPipeline({ name: 'p', stages, pipelineContextItems: [{ key: 'token', value: 'hunter2', isSensitive: true }] }, { applicationId: app.id });
  if (!planned.ok) throw new Error('invalid');
  const now = new Date();
  const pipelineId = await database.db.$transaction((tx) => insertPipeline(tx, planned.pipeline, now));
  const stage = await database.db.stage.findFirstOrThrow({ where: { pipelineId: BigInt(pipelineId), position: 0 } });
  const executionId = randomUUID();
  await database.db.$transaction(async (tx) => {
    // as after the dispatcher's first pass
    await tx.pipeline.update({ where: { id: BigInt(pipelineId) }, data: { dispatched: true, status: 'Running' } });
    await startExecutions(tx, app.id, [{ stageId: Number(stage.id), executionId }], now);
    const state = await lockExecutionState(tx, Number(stage.id), executionId, { lockPipeline: false });
    await grantLease(tx, state!, { executionId, attempt: 1, workerId: 'w', now, leaseExpiresAt: new Date(now.getTime() + 60_000) });
  });
  return { applicationId: app.id, pipelineId, stageId: Number(stage.id), executionId };
}

const message = (s: { applicationId: number; stageId: number; executionId: string }, result: Record<string, unknown>) => ({
  applicationId: s.applicationId,
  stageId: s.stageId,
  workerId: 'w',
  receivedAt: new Date().toISOString(),
  result: { stageId: s.stageId, executionId: s.executionId, attempt: 1, ...result },
});

describe('applying a result (addendum §12, §13)', () => {
  it('applies a success once; the same result again is discarded and changes nothing', async () => {
    const s = await runningStage([
      { stageName: 'a', stageHandlerName: 'h' },
      { stageName: 'b', stageHandlerName: 'h' },
    ]);
    const m = message(s, { isSuccess: true, result: 'out', logs: [{ message: 'used hunter2 to log in' }], contextItems: [{ key: 'k', value: 'v' }] });
    expect(await applier.apply(m)).toBe(true);
    const after = await database.db.stage.findUniqueOrThrow({ where: { id: BigInt(s.stageId) }, include: { logs: true } });
    expect(after).toMatchObject({ status: 'Completed', output: 'out' });
    expect(after.logs.map((l) => l.message)).toEqual(['used [REDACTED] to log in']);

    expect(await applier.apply(m)).toBe(false);
    const again = await database.db.stage.findUniqueOrThrow({ where: { id: BigInt(s.stageId) }, include: { logs: true } });
    expect(again.logs).toHaveLength(1);
    expect(again).toMatchObject({ status: after.status, output: after.output, finishedAt: after.finishedAt });
    expect(await database.db.contextItem.count({ where: { pipelineId: BigInt(s.pipelineId) } })).toBe(2);
    expect(warnings.some((w) => w.includes('result discarded') && w.includes(s.executionId))).toBe(true);
  });

  it('fences a result with another attempt or execution', async () => {
    const s = await runningStage([{ stageName: 'a', stageHandlerName: 'h' }]);
    expect(await applier.apply(message(s, { isSuccess: true, attempt: 2 }))).toBe(false);
    expect(await applier.apply(message({ ...s, executionId: randomUUID() }, { isSuccess: true }))).toBe(false);
    expect((await database.db.stage.findUniqueOrThrow({ where: { id: BigInt(s.stageId) } })).status).toBe('Running');
  });

  it('schedules a retry for an eligible failure and fails a terminal one', async () => {
    const retried = await runningStage([{ stageName: 'a', stageHandlerName: 'h', options: { maxRetries: 2, retryInterval: 10, backoff: 'linear' } }]);
    await applier.apply(message(retried, { isSuccess: false, errorCode: 'FLAKY', result: 'partial' }));
    const r = await database.db.stage.findUniqueOrThrow({ where: { id: BigInt(retried.stageId) } });
    expect(r).toMatchObject({ status: 'RetryScheduled', retryAttempt: 1, failureCount: 1, lastErrorCode: 'FLAKY', failureDisposition: 'retryable', output: 'partial' });
    expect(r.nextRetryAt!.getTime() - r.lastFailedAt!.getTime()).toBe(10_000);
    expect((await database.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(retried.pipelineId) } })).status).toBe('Pending');

    const terminal = await runningStage([{ stageName: 'a', stageHandlerName: 'h', options: { maxRetries: 2, retryInterval: 10 } }]);
    await applier.apply(message(terminal, { isSuccess: false, errorCode: 'BUSINESS_REJECTED' }));
    const t = await database.db.stage.findUniqueOrThrow({ where: { id: BigInt(terminal.stageId) } });
    expect(t).toMatchObject({ status: 'Failed', failureDisposition: 'terminal', retryAttempt: 0 });
    expect((await database.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(terminal.pipelineId) } })).status).toBe('Failed');
  });

  it('parks for approval whatever isSuccess says, and appends worker stages at the end', async () => {
    const s = await runningStage([{ stageName: 'a', stageHandlerName: 'h' }]);
    await applier.apply(message(s, { isSuccess: false, isWaitingForApproval: true, appendedStages: [{ stageName: 'extra', stageHandlerName: 'h2', input: { n: 1 }, options: { dependsOn: ['a'] } }] }));
    const stages = await database.db.stage.findMany({ where: { pipelineId: BigInt(s.pipelineId) }, orderBy: { position: 'asc' } });
    expect(stages.map((x) => [x.name, x.status, x.input])).toEqual([
      ['a', 'WaitingForApproval', ''],
      ['extra', 'NotStarted', '{"n":1}'],
    ]);
    expect((await database.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(s.pipelineId) } })).status).toBe('Paused');
  });
});
