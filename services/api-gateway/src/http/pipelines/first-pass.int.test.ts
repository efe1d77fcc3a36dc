// A new pipeline's first dispatcher pass runs in the api-gateway that created it (decision 0102):
// against a real gateway, database and queues, with no pipeline-service running.
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE, STAGE_NEXT_BATCH_JOB, stageNextBullName, type StageNextBatchJob } from '@po/queues';

const started: Gateway[] = [];
afterAll(async () => {
  for (const gw of started) await gw.close();
});

async function gateway(options: Parameters<typeof startGateway>[0]): Promise<Gateway> {
  const gw = await startGateway(options);
  started.push(gw);
  return gw;
}

async function jobsOf(gw: Gateway, name: string, states: ('waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'prioritized')[]) {
  const queue = new Queue(name, { connection: gw.redis, prefix: gw.prefix });
  try {
    return await queue.getJobs(states);
  } finally {
    await queue.close();
  }
}

/** The waiting StageNext messages of a handler: a batch job (several dispatched together) carries several. */
const stageNextJobs = async (gw: Gateway, handler: string) =>
  (await jobsOf(gw, stageNextBullName(`app_${gw.appA.id}_${handler}_StageNext`), ['waiting', 'prioritized'])).flatMap((j) =>
    j.name === STAGE_NEXT_BATCH_JOB ? (j.data as StageNextBatchJob).batch.map((data) => ({ data })) : [{ data: j.data as unknown }],
  );
const eventsFor = async (gw: Gateway, pipelineId: number) =>
  (await jobsOf(gw, PIPELINE_EVENTS_QUEUE, ['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized']))
    .map((j) => j.data as { type: string; pipelineId: number })
    .filter((e) => e.pipelineId === pipelineId);

/** The stages' statuses once the pipeline's pass has run (it clears dispatch_requested_at), in position order. */
async function afterPass(gw: Gateway, pipelineId: number, timeoutMs = 5000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(pipelineId) }, select: { dispatchRequestedAt: true } });
    if (row.dispatchRequestedAt === null) break;
    if (Date.now() > deadline) throw new Error(`pipeline ${pipelineId} still waits for its pass after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const stages = await gw.db.stage.findMany({ where: { pipelineId: BigInt(pipelineId) }, orderBy: { position: 'asc' }, select: { status: true } });
  return stages.map((s) => s.status);
}

const definition = (handler: string) => ({
  name: 'first pass',
  stages: [
    { stageName: 'one', stageHandlerName: handler },
    { stageName: 'two', stageHandlerName: handler },
  ],
});

describe('the first pass of a new pipeline runs in api-gateway (decision 0102)', () => {
  it('an idempotent creation answers as created and its first stage is dispatched: one execution, one StageNext message, no event', async () => {
    const gw = await gateway({ firstPasses: { inCreation: false } });
    const handler = `h${randomUUID().slice(0, 8)}`;
    const reply = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), ...definition(handler) } });
    expect(reply.status, reply.text).toBe(201);
    // The answer is the pipeline as the creation inserted it; the pass comes after (batched, not in the creation).
    expect(reply.body.pipeline.stages.map((s: { status: string }) => s.status)).toEqual(['NotStarted', 'NotStarted']);
    const id = reply.body.pipeline.id as number;

    expect(await afterPass(gw, id)).toEqual(['Pending', 'NotStarted']);
    const executions = await gw.db.stageExecution.findMany({ where: { stage: { pipelineId: BigInt(id) } } });
    expect(executions).toHaveLength(1);
    const jobs = await stageNextJobs(gw, handler);
    expect(jobs.map((j) => (j.data as { executionId: string; pipelineId: number }).executionId)).toEqual([executions[0]!.id]);
    expect(await eventsFor(gw, id)).toEqual([]);
  });

  it('legacy creations and reruns are dispatched the same way', async () => {
    const gw = await gateway({ firstPasses: true });
    const handler = `h${randomUUID().slice(0, 8)}`;
    const legacy = await gw.call('POST', '/pipelines', { json: { apiKey: gw.appA.key, ...definition(handler) }, key: null });
    expect(legacy.status, legacy.text).toBe(200);
    expect(await afterPass(gw, legacy.body.id)).toEqual(['Pending', 'NotStarted']);

    const cancelled = await gw.call('POST', `/pipelines/${legacy.body.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBeLessThan(300);
    const rerun = await gw.call('POST', `/pipelines/${legacy.body.id}/rerun`);
    expect(rerun.status, rerun.text).toBe(201);
    expect(await afterPass(gw, rerun.body.id)).toEqual(['Pending', 'NotStarted']);
    expect(await eventsFor(gw, rerun.body.id)).toEqual([]);
  });

  it('keeps APP_MAX_ACTIVE_STAGES: past the cap the first stage is Throttled', async () => {
    const gw = await gateway({ firstPasses: { maxActiveStages: 1 } });
    const handler = `h${randomUUID().slice(0, 8)}`;
    const first = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), ...definition(handler) } });
    expect(await afterPass(gw, first.body.pipeline.id)).toEqual(['Pending', 'NotStarted']);
    const second = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), ...definition(handler) } });
    expect(await afterPass(gw, second.body.pipeline.id)).toEqual(['Throttled', 'NotStarted']);
    expect(await stageNextJobs(gw, handler)).toHaveLength(1);
  });

  it('when too many passes wait, the creation is handed to pipeline-service: pipeline.created, nothing dispatched here', async () => {
    const gw = await gateway({ firstPasses: { maxWaiting: 0 } });
    const handler = `h${randomUUID().slice(0, 8)}`;
    const reply = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), ...definition(handler) } });
    expect(reply.status, reply.text).toBe(201);
    const id = reply.body.pipeline.id as number;
    expect(await eventsFor(gw, id)).toEqual([expect.objectContaining({ type: 'pipeline.created', applicationId: gw.appA.id, pipelineId: id })]);
    // The request for a pass stays stored for pipeline-service (its event, or its sweep).
    const row = await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(id) }, select: { dispatchRequestedAt: true } });
    expect(row.dispatchRequestedAt).not.toBeNull();
    expect(await stageNextJobs(gw, handler)).toEqual([]);
  });
});

describe('at light load the first pass runs in the creation\'s transaction (decision 0106)', () => {
  it('the answer leaves after the first stage was dispatched and its message published: nothing left to wait for', async () => {
    const gw = await gateway({ firstPasses: true });
    const handler = `h${randomUUID().slice(0, 8)}`;
    const key = randomUUID();
    const reply = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: key, ...definition(handler) } });
    expect(reply.status, reply.text).toBe(201);
    const id = reply.body.pipeline.id as number;
    // One transaction wrote the key's binding (which no pass touches) and the execution.
    const [row0] = await gw.db.$queryRaw<{ same: boolean }[]>`
      SELECT (SELECT k.xmin::text FROM idempotency_keys k WHERE k.application_id = ${gw.appA.id} AND k.key = ${key})
           = (SELECT e.xmin::text FROM stage_executions e JOIN stages s ON s.id = e.stage_id WHERE s.pipeline_id = ${BigInt(id)}) AS same`;
    expect(row0?.same).toBe(true);
    // Read at once, without waiting: the pass committed with the creation.
    const row = await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(id) }, select: { dispatchRequestedAt: true } });
    expect(row.dispatchRequestedAt).toBeNull();
    const stages = await gw.db.stage.findMany({ where: { pipelineId: BigInt(id) }, orderBy: { position: 'asc' }, include: { executions: true } });
    expect(stages.map((s) => s.status)).toEqual(['Pending', 'NotStarted']);
    expect(stages[0]!.executions).toHaveLength(1);
    const jobs = await stageNextJobs(gw, handler);
    expect(jobs.map((j) => (j.data as { executionId: string }).executionId)).toEqual([stages[0]!.executions[0]!.id]);
    expect(await eventsFor(gw, id)).toEqual([]);
  });

  it('a replay of the key dispatches nothing more, and legacy creations take the same path', async () => {
    const gw = await gateway({ firstPasses: true });
    const handler = `h${randomUUID().slice(0, 8)}`;
    const key = randomUUID();
    const first = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: key, ...definition(handler) } });
    const replay = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: key, ...definition(handler) } });
    expect(first.status, first.text).toBe(201);
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body.pipeline.id).toBe(first.body.pipeline.id);
    expect(await stageNextJobs(gw, handler)).toHaveLength(1);

    const legacy = await gw.call('POST', '/pipelines', { json: { apiKey: gw.appA.key, ...definition(handler) }, key: null });
    expect(legacy.status, legacy.text).toBe(200);
    const row = await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(legacy.body.id) }, select: { dispatchRequestedAt: true } });
    expect(row.dispatchRequestedAt).toBeNull();
    expect(await stageNextJobs(gw, handler)).toHaveLength(2);
  });

  it('a pass that fails does not lose the creation: it is made again without it and dispatched by a batched pass', async () => {
    const gw = await gateway({ firstPasses: true });
    const handler = `h${randomUUID().slice(0, 8)}`;
    // The StageNext queue's Redis is gone for this creation's pass: its publish fails, the
    // transaction rolls back, and the creation commits again alone.
    const original = gw.deps.firstPasses.within;
    gw.deps.firstPasses.within = () => Promise.reject(new Error('publish failed'));
    try {
      const reply = await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), ...definition(handler) } });
      expect(reply.status, reply.text).toBe(201);
      const id = reply.body.pipeline.id as number;
      expect(await gw.db.pipeline.count({ where: { name: 'first pass', id: BigInt(id) } })).toBe(1);
      expect(await afterPass(gw, id)).toEqual(['Pending', 'NotStarted']);
    } finally {
      gw.deps.firstPasses.within = original;
    }
  });
});
