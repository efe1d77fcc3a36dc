// The sweeper (addendum §9, §11; issue 9's durability gaps): lost StageNext messages, results that
// got 202 but wait to be applied, and items that fail on their own.
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPipeline } from '@po/db';
import { planPipeline, type PipelineDefinitionInput } from '@po/domain';
import { Engine } from '@po/engine';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageResultsProducer,
  resultJobId,
  stageNextBullName,
  STAGE_RESULTS_QUEUE,
  type StageNextPublisher,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import type { DispatcherDeps } from './deps.js';
import { newSweeperState, sweepOnce, type SweeperOptions } from './sweeper.js';

let database: TestDatabase;
let deps: DispatcherDeps;
let applicationId: number;
const logLines: string[] = [];
const prefix = testQueuePrefix('sweep');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const options: SweeperOptions = { intervalMs: 500, eventGraceMs: 1000, throttling: false, lostMessageAfterSeconds: 5 };

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'sweep' } })).id;
  const logger = createLogger({
    service: 'pipeline-service',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  });
  const publisher = createStageNextPublisher(redis, prefix);
  // One queue refuses every publish, as a failing Redis write would: its pipeline's pass fails each time.
  const refusing: StageNextPublisher = {
    ...publisher,
    publish: (queue, messages) => (queue.endsWith('_unpublishable_StageNext') ? Promise.reject(new Error('publish refused')) : publisher.publish(queue, messages)),
  };
  const engine = new Engine({ db: database.db, publisher: refusing, events: createPipelineEventsProducer(redis, prefix), logger, random: () => 0.5, maxActiveStages: 0 });
  deps = { db: database.db, engine, publisher, results: createStageResultsProducer(redis, prefix), logger };
});

afterAll(async () => {
  await deps.publisher.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

const db = () => database.db;

/** A pipeline whose first stage the engine dispatched (Pending, message published). */
async function dispatched(definition: PipelineDefinitionInput) {
  const planned = planPipeline(definition, { applicationId });
  if (!planned.ok) throw new Error('invalid');
  const id = await db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
  await deps.engine.run([{ kind: 'pass', pipelineId: id }]);
  const stage = await db().stage.findFirstOrThrow({ where: { pipelineId: BigInt(id), position: 0 } });
  return { pipelineId: id, stageId: Number(stage.id), executionId: stage.currentExecutionId!, handler: stage.handlerName };
}

const queueOf = (handler: string) => new Queue(stageNextBullName(`app_${applicationId}_${handler}_StageNext`), { connection: redis, prefix });

describe('the sweeper', () => {
  it('republishes a published message that Redis lost, with the same execution, once it has waited long enough', async () => {
    const d = await dispatched({ name: 'lost', stages: [{ stageName: 'a', stageHandlerName: 'lost', input: 'x' }] });
    const queue = queueOf('lost');
    expect(await queue.getJob(d.executionId)).toBeDefined();
    await queue.remove(d.executionId);
    expect(await queue.getJob(d.executionId)).toBeUndefined();

    // Published just now: not yet considered lost.
    await sweepOnce(deps, options, newSweeperState());
    expect(await queue.getJob(d.executionId)).toBeUndefined();

    await db().$executeRaw`UPDATE stage_executions SET dispatched_at = now() - interval '10 seconds' WHERE id = ${d.executionId}::uuid`;
    await sweepOnce(deps, options, newSweeperState());
    const job = await queue.getJob(d.executionId);
    expect(job?.data).toMatchObject({ executionId: d.executionId, stageId: d.stageId, input: 'x' });
    expect(await db().stage.findUniqueOrThrow({ where: { id: BigInt(d.stageId) } })).toMatchObject({ status: 'Pending', currentExecutionId: d.executionId });
    expect(logLines.some((l) => l.includes('republished a lost StageNext message') && l.includes(d.executionId))).toBe(true);
    await queue.close();
  });

  it('does not expire an execution whose result got 202 while that result waits; expires it once the result is gone', async () => {
    const d = await dispatched({ name: 'received', stages: [{ stageName: 'a', stageHandlerName: 'received' }] });
    await db().$executeRaw`UPDATE stages SET status = 'Running', attempt = 1 WHERE id = ${BigInt(d.stageId)}`;
    await db().$executeRaw`
      UPDATE stage_executions SET attempt = 1, lease_owner = 'w', leased_at = now() - interval '2 minutes',
        lease_expires_at = now() - interval '1 minute'
      WHERE id = ${d.executionId}::uuid`;
    const results = createStageResultsProducer(redis, prefix);
    await results.publish({
      applicationId,
      stageId: d.stageId,
      pipelineId: d.pipelineId,
      workerId: 'w',
      receivedAt: new Date().toISOString(),
      result: { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true },
    });
    await sweepOnce(deps, options, newSweeperState());
    expect((await db().stage.findUniqueOrThrow({ where: { id: BigInt(d.stageId) } })).status).toBe('Running');

    const queue = new Queue(STAGE_RESULTS_QUEUE, { connection: redis, prefix });
    await queue.remove(resultJobId(d.executionId, 1));
    await sweepOnce(deps, options, newSweeperState());
    expect(await db().stage.findUniqueOrThrow({ where: { id: BigInt(d.stageId) } })).toMatchObject({ status: 'Failed', lastErrorCode: 'LEASE_EXPIRED' });
    await queue.close();
    await results.close();
  });

  it('a pipeline whose message cannot be published does not block the rest', async () => {
    const created = async (name: string, handler: string) => {
      const planned = planPipeline({ name, stages: [{ stageName: 'a', stageHandlerName: handler }] }, { applicationId });
      if (!planned.ok) throw new Error('invalid');
      const id = await db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
      // Its creation event was lost: the sweep finds the due pass.
      await db().$executeRaw`UPDATE pipelines SET dispatch_requested_at = now() - interval '10 seconds' WHERE id = ${BigInt(id)}`;
      return id;
    };
    const bad = await created('bad', 'unpublishable');
    const good = await created('good', 'good');
    // BullMQ refuses `:` in a queue name; the handler's queue is encoded for it (decision 0081).
    const colon = await created('colon', 'has:colon');
    await sweepOnce(deps, options, newSweeperState());
    for (const [pipelineId, handler] of [[good, 'good'], [colon, 'has:colon']] as const) {
      const [stage] = await db().stage.findMany({ where: { pipelineId: BigInt(pipelineId) } });
      expect(stage!.status).toBe('Pending');
      const queue = queueOf(handler);
      expect(await queue.getJob(stage!.currentExecutionId!)).toBeDefined();
      await queue.close();
    }
    // Its dispatch committed all the same (the publish follows the commit, decision 0121): the
    // lost-message walk republishes it once the broker takes it.
    const [badStage] = await db().stage.findMany({ where: { pipelineId: BigInt(bad) } });
    expect(badStage!.status).toBe('Pending');
    expect(await db().stageExecution.count({ where: { stageId: badStage!.id } })).toBe(1);
    expect(logLines.some((l) => l.includes('not published'))).toBe(true);
  });
});
