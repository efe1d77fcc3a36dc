// The sweeper (addendum §9, §11; issue 9's durability gaps): results that got 202 but wait to be
// applied, and items that fail on their own; issue 28: expiry that one application's waiting
// results cannot hold up for another, and no burst of expiries after an outage (decision 0120).
// Lost StageNext messages: lost-messages.int.test.ts.
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPipeline } from '@po/engine';
import { planPipeline, type PipelineDefinitionInput } from '@po/domain';
import { Engine } from '@po/engine';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageResultsProducer,
  resultJobId,
  setStageNextConcurrency,
  setStageNextPaused,
  stageNextBullName,
  stageNextQueueStates,
  stageResultsQueue,
  type StageNextPublisher,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import type { DispatcherDeps } from './deps.js';
import { createRedisLossDetector } from './redis-loss.js';
import { newSweeperState, sweepOnce, type SweeperOptions } from './sweeper.js';

let database: TestDatabase;
let deps: DispatcherDeps;
let applicationId: number;
const logLines: string[] = [];
const prefix = testQueuePrefix('sweep');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const options: SweeperOptions = { intervalMs: 500, eventGraceMs: 1000, lostMessageAfterSeconds: 5 };

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
  deps = {
    db: database.db,
    engine,
    publisher,
    results: createStageResultsProducer(redis, prefix),
    logger,
    redisLoss: createRedisLossDetector(redis, prefix),
    queueSettings: {
      states: (queues) => stageNextQueueStates(redis, prefix, queues),
      setPaused: (queue, paused) => setStageNextPaused(redis, prefix, queue, paused),
      setConcurrency: (queue, concurrency) => setStageNextConcurrency(redis, prefix, queue, concurrency),
    },
  };
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

/**
 * `count` pipelines of `app`, each with its one stage Running on a lease granted to worker `w` as
 * attempt 1: its lease expiring at now() + `leaseExpiresIn`, its handler timeout at now() +
 * `timeoutIn` (null: none), both PostgreSQL intervals.
 */
async function running(app: number, count: number, leaseExpiresIn: string, timeoutIn: string | null = null) {
  const ids: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const planned = planPipeline({ name: `running-${i}`, stages: [{ stageName: 'a', stageHandlerName: 'long' }] }, { applicationId: app });
    if (!planned.ok) throw new Error('invalid');
    ids.push(await db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date())));
  }
  await deps.engine.run(ids.map((pipelineId) => ({ kind: 'pass', pipelineId })));
  const pipelineIds = ids.map(BigInt);
  await db().$executeRaw`UPDATE stages SET status = 'Running', attempt = 1 WHERE pipeline_id = ANY(${pipelineIds})`;
  await db().$executeRaw`
    UPDATE stage_executions e SET attempt = 1, lease_owner = 'w', leased_at = now() - interval '3 minutes',
      lease_expires_at = now() + ${leaseExpiresIn}::interval, timeout_at = now() + ${timeoutIn}::interval
    FROM stages s WHERE s.current_execution_id = e.id AND s.pipeline_id = ANY(${pipelineIds})`;
  const stages = await db().stage.findMany({ where: { pipelineId: { in: pipelineIds } } });
  return stages.map((st) => ({ pipelineId: Number(st.pipelineId), stageId: Number(st.id), executionId: st.currentExecutionId! }));
}

const stageOf = (stageId: number) => db().stage.findUniqueOrThrow({ where: { id: BigInt(stageId) } });

const queueOf = (handler: string) => new Queue(stageNextBullName(`app_${applicationId}_${handler}_StageNext`), { connection: redis, prefix });

describe('the sweeper', () => {
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

    const queue = new Queue(stageResultsQueue(applicationId), { connection: redis, prefix });
    await queue.remove(resultJobId(d.executionId, 1, 'w'));
    await sweepOnce(deps, options, newSweeperState());
    expect(await db().stage.findUniqueOrThrow({ where: { id: BigInt(d.stageId) } })).toMatchObject({ status: 'Failed', lastErrorCode: 'LEASE_EXPIRED' });
    await queue.close();
    await results.close();
  });

  it("250 expired executions of one application whose results wait on the queue do not keep another application's from expiring in the same sweep", async () => {
    const appA = (await db().application.create({ data: { name: 'stuck' } })).id;
    const appB = (await db().application.create({ data: { name: 'other' } })).id;
    const stuck = await running(appA, 250, '-2 minutes');
    const results = createStageResultsProducer(redis, prefix);
    for (const s of stuck) {
      await results.publish({
        applicationId: appA,
        stageId: s.stageId,
        pipelineId: s.pipelineId,
        workerId: 'w',
        receivedAt: new Date().toISOString(),
        result: { stageId: s.stageId, executionId: s.executionId, attempt: 1, isSuccess: true },
      });
    }
    await results.close();
    // Due after all of A's waiting ones: B's comes first in B's turn, A's own lapsed one on the next page.
    const [ofB] = await running(appB, 1, '-1 minute');
    const [lapsedOfA] = await running(appA, 1, '-30 seconds');

    await sweepOnce(deps, options, newSweeperState());
    expect(await stageOf(ofB!.stageId)).toMatchObject({ status: 'Failed', lastErrorCode: 'LEASE_EXPIRED' });
    expect(await stageOf(lapsedOfA!.stageId)).toMatchObject({ status: 'Failed', lastErrorCode: 'LEASE_EXPIRED' });
    const stillRunning = await db().stage.count({ where: { id: { in: stuck.map((s) => BigInt(s.stageId)) }, status: 'Running' } });
    expect(stillRunning).toBe(250);
  });

  it('after an outage renews once the leases that lapsed during it instead of expiring them; handler timeouts and earlier lapses still expire', async () => {
    const app = (await db().application.create({ data: { name: 'outage' } })).id;
    const state = newSweeperState();
    await sweepOnce(deps, options, state);
    const [lapsesInOutage] = await running(app, 1, '1 second');
    const [timedOut] = await running(app, 1, '40 seconds', '-1 second');
    const [lapsedBefore] = await running(app, 1, '-1 minute');

    // Redis is away: whether a result waits cannot be known, so nothing expires and the sweeper notes the outage.
    const redisDown: DispatcherDeps = { ...deps, results: { waiting: () => Promise.reject(new Error('Connection is closed.')) } };
    await sweepOnce(redisDown, options, state);
    expect(state.expiryInterrupted).toBe(true);
    await sleep(1500);
    expect((await stageOf(lapsesInOutage!.stageId)).status).toBe('Running');

    await sweepOnce(deps, options, state);
    expect(state.expiryInterrupted).toBe(false);
    expect((await stageOf(lapsesInOutage!.stageId)).status).toBe('Running');
    const [renewed] = await db().$queryRaw<{ left: number }[]>`
      SELECT extract(epoch FROM lease_expires_at - now())::float8 AS left FROM stage_executions WHERE id = ${lapsesInOutage!.executionId}::uuid`;
    expect(renewed!.left).toBeGreaterThan(50);
    expect(await stageOf(timedOut!.stageId)).toMatchObject({ status: 'Failed', lastErrorCode: 'TIMEOUT' });
    expect(await stageOf(lapsedBefore!.stageId)).toMatchObject({ status: 'Failed', lastErrorCode: 'LEASE_EXPIRED' });
    expect(logLines.some((l) => l.includes('expiry resumed after an outage'))).toBe(true);

    // The renewal is one, not a standing pardon: once that lease lapses again with no outage, it expires.
    await db().$executeRaw`UPDATE stage_executions SET lease_expires_at = now() - interval '1 second' WHERE id = ${lapsesInOutage!.executionId}::uuid`;
    await sweepOnce(deps, options, state);
    expect(await stageOf(lapsesInOutage!.stageId)).toMatchObject({ status: 'Failed', lastErrorCode: 'LEASE_EXPIRED' });
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

  it("holds each handler's StageNext queue to its pause setting: a pause Redis lost is applied again, a stale one lifted (decision 0132)", async () => {
    const queue = (handler: string) => `app_${applicationId}_${handler}_StageNext`;
    await db().$executeRaw`
      INSERT INTO handler_settings (application_id, handler_name, paused) VALUES (${applicationId}, 'sweep-paused', true), (${applicationId}, 'sweep-resumed', false)`;
    // Redis says the opposite of both, as after a FLUSHALL (the pause gone) and a lost resume.
    await setStageNextPaused(redis, prefix, queue('sweep-resumed'), true);
    const paused = async () => (await stageNextQueueStates(redis, prefix, [queue('sweep-paused'), queue('sweep-resumed')])).map((s) => s.paused);
    expect(await paused()).toEqual([false, true]);
    await sweepOnce(deps, options, newSweeperState());
    expect(await paused()).toEqual([true, false]);
  });

  it("holds each handler's StageNext queue to its maxConcurrent: a concurrency Redis lost is set again, a changed one corrected, a stale one removed (decision 0132)", async () => {
    const queue = (handler: string) => `app_${applicationId}_${handler}_StageNext`;
    await db().$executeRaw`
      INSERT INTO handler_settings (application_id, handler_name, max_concurrent)
      VALUES (${applicationId}, 'sweep-max-lost', 3), (${applicationId}, 'sweep-max-changed', 5), (${applicationId}, 'sweep-max-cleared', NULL)`;
    const queues = [queue('sweep-max-lost'), queue('sweep-max-changed'), queue('sweep-max-cleared')];
    // Redis lost the first, holds an older value of the second, and a limit since cleared on the third.
    await setStageNextConcurrency(redis, prefix, queues[1]!, 2);
    await setStageNextConcurrency(redis, prefix, queues[2]!, 4);
    const concurrencies = async () => (await stageNextQueueStates(redis, prefix, queues)).map((s) => s.concurrency);
    expect(await concurrencies()).toEqual([null, 2, 4]);
    await sweepOnce(deps, options, newSweeperState());
    expect(await concurrencies()).toEqual([3, 5, null]);
  });
});
