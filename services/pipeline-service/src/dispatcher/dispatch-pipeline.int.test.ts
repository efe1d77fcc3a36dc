import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPipeline } from '@po/engine';
import { planPipeline, type PipelineDefinitionInput } from '@po/domain';
import { Engine, type EngineDeps } from '@po/engine';
import { createPipelineEventsProducer, createRedis, createStageNextPublisher, stageNextBullName } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { dispatchPipeline } from './dispatch-pipeline.js';

let database: TestDatabase;
let deps: EngineDeps & { engine: Engine };
let applicationId: number;
const prefix = testQueuePrefix('ps');
const redis = createRedis(TEST_REDIS_URL, 'producer');

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'ps' } })).id;
  const logger = createLogger({ service: 'pipeline-service', destination: new Writable({ write: (_c, _e, done) => done() }) });
  const engineDeps: EngineDeps = {
    db: database.db,
    publisher: createStageNextPublisher(redis, prefix),
    events: createPipelineEventsProducer(redis, prefix),
    logger,
    random: () => 0.5,
    maxActiveStages: 0,
  };
  deps = { ...engineDeps, engine: new Engine(engineDeps) };
});

afterAll(async () => {
  await deps.publisher.close();
  await deps.events.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

async function create(definition: PipelineDefinitionInput): Promise<number> {
  const planned = planPipeline(definition, { applicationId });
  if (!planned.ok) throw new Error('invalid');
  return database.db.$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
}

const queued = async (handler: string) => {
  const queue = new Queue(stageNextBullName(`app_${applicationId}_${handler}_StageNext`), { connection: redis, prefix });
  const jobs = await queue.getJobs(['waiting', 'prioritized']);
  await queue.close();
  return jobs;
};

describe('the dispatcher (addendum §9)', () => {
  it('concurrent passes over one pipeline create one execution per ready stage and publish it once', async () => {
    const id = await create({
      name: 'fan-out',
      stages: [
        { stageName: 'a', stageHandlerName: 'fan' },
        { stageName: 'b', stageHandlerName: 'fan', options: { dependsOn: [] } },
      ],
    });
    // 'b' has empty dependsOn: it waits for all earlier stages, so only 'a' is ready.
    await Promise.all(Array.from({ length: 8 }, () => dispatchPipeline(deps, id, { skipLocked: false })));
    const executions = await database.db.stageExecution.findMany({ where: { stage: { pipelineId: BigInt(id) } } });
    expect(executions).toHaveLength(1);
    const jobs = await queued('fan');
    expect(jobs.map((j) => j.id)).toEqual([executions[0]!.id]);
    expect(jobs[0]!.data).toMatchObject({ pipelineId: id, stageName: 'a', executionId: executions[0]!.id, previousAttempts: 0 });
    const pipeline = await database.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(id) } });
    expect(pipeline).toMatchObject({ status: 'Running', dispatched: true, dispatchRequestedAt: null });
  });

  it('dispatches parallel branches together and marks a stage after a failure Skipped', async () => {
    const id = await create({
      name: 'branches',
      stages: [
        { stageName: 'root', stageHandlerName: 'br' },
        { stageName: 'left', stageHandlerName: 'br', options: { dependsOn: ['root'] } },
        { stageName: 'right', stageHandlerName: 'br', options: { dependsOn: ['root'] } },
        { stageName: 'after-left', stageHandlerName: 'br', options: { dependsOn: ['left'] } },
      ],
    });
    await database.db.stage.updateMany({ where: { pipelineId: BigInt(id), name: 'root' }, data: { status: 'Completed' } });
    await database.db.stage.updateMany({ where: { pipelineId: BigInt(id), name: 'left' }, data: { status: 'Failed' } });
    await dispatchPipeline(deps, id, { skipLocked: false });
    const stages = await database.db.stage.findMany({ where: { pipelineId: BigInt(id) }, orderBy: { position: 'asc' } });
    expect(stages.map((s) => s.status)).toEqual(['Completed', 'Failed', 'Pending', 'Skipped']);
  });

  it('throttles at APP_MAX_ACTIVE_STAGES, oldest stage first', async () => {
    const capped = { engine: new Engine({ ...deps, maxActiveStages: 1 }) };
    const app = (await database.db.application.create({ data: { name: 'capped' } })).id;
    const make = async () => {
      const planned = planPipeline({ name: 'c', stages: [{ stageName: 's', stageHandlerName: 'cap' }] }, { applicationId: app });
      if (!planned.ok) throw new Error('invalid');
      return database.db.$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
    };
    const first = await make();
    const second = await make();
    await dispatchPipeline(capped, first, { skipLocked: false });
    await dispatchPipeline(capped, second, { skipLocked: false });
    const statuses = await database.db.stage.findMany({ where: { applicationId: app }, orderBy: { id: 'asc' }, select: { status: true } });
    expect(statuses.map((s) => s.status)).toEqual(['Pending', 'Throttled']);
    expect((await database.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(second) } })).status).toBe('Running');
  });
});
