// A stage handler may be any name of 1..300 characters (api-spec Limits), `:` included, and its
// queue keeps the worker-facing name `app_{applicationId}_{handler}_StageNext` (addendum §9, §15).
// BullMQ refuses `:` in a queue name, so such a stage once committed Pending with no message and
// its pull answered 500 (issue 10 item 3, decision 0081). Here the real engine dispatches, the
// gateway serves pull, lease and result, and the engine applies the result as result-consumer does.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageQueueName } from '@po/contracts';
import { insertPipeline } from '@po/engine';
import { planPipeline } from '@po/domain';
import { Engine } from '@po/engine';
import { createPipelineEventsProducer, createRedis, createStageNextPublisher, createStageResultsConsumer, type StageNextPublisher } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';

let gw: WorkerGatewayHarness;
let publisher: StageNextPublisher;
const producerRedis = createRedis(TEST_REDIS_URL, 'producer');
const consumerRedis = createRedis(TEST_REDIS_URL, 'worker');
let closeEngine: () => Promise<void>;
let engine: Engine;

beforeAll(async () => {
  gw = await startWorkerGateway();
  publisher = createStageNextPublisher(producerRedis, gw.prefix);
  const events = createPipelineEventsProducer(producerRedis, gw.prefix);
  const logger = createLogger({ service: 'engine', destination: new Writable({ write: (_c, _e, done) => done() }) });
  engine = new Engine({ db: gw.db, publisher, events, logger, random: () => 0.5, maxActiveStages: 0 });
  const consumers = createStageResultsConsumer(consumerRedis, gw.prefix, async (message) => {
    await engine.run([{ kind: 'result', pipelineId: message.pipelineId ?? 0, message }]);
  });
  closeEngine = async () => {
    await Promise.all(consumers.map((c) => c.close()));
    await publisher.close();
    await events.close();
  };
});

afterAll(async () => {
  await closeEngine?.();
  await gw?.close();
  await Promise.all([producerRedis.quit(), consumerRedis.quit()]);
});

const status = async (pipelineId: number) =>
  (await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(pipelineId) }, select: { status: true } })).status;

async function waitFor<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One worker round: pull the handler's queue, lease the stage, post its result, ack. */
async function runOne(session: { workerId: string; sessionToken: string }, handler: string) {
  const queue = stageQueueName(gw.appA.id, handler);
  const pulled = await gw.call('POST', '/jobs/pull', { json: { queue, waitSeconds: 5 }, headers: { 'x-api-key': gw.appA.key } });
  expect(pulled.status, pulled.text).toBe(200);
  expect(pulled.body.queue).toBe(queue);
  const { stageId, executionId, stageHandlerName } = pulled.body.payload as { stageId: number; executionId: string; stageHandlerName: string };
  expect(stageHandlerName).toBe(handler);
  const lease = await gw.call('POST', `/stages/${stageId}/lease/acquire`, {
    json: { executionId, workerId: session.workerId },
    headers: { 'x-worker-session': session.sessionToken },
  });
  expect(lease.body, lease.text).toMatchObject({ acquired: true });
  const result = await gw.call('POST', `/stages/${stageId}/result`, {
    json: { stageId, executionId, attempt: lease.body.attempt, isSuccess: true, result: `done by ${handler}` },
    headers: { 'x-api-key': gw.appA.key, 'x-worker-session': session.sessionToken },
  });
  expect(result.status, result.text).toBe(202);
  expect((await gw.call('POST', '/jobs/ack', { json: { token: pulled.body.token } })).status).toBe(200);
  return stageId;
}

describe('handler names BullMQ would refuse', () => {
  it('a pipeline whose handlers are `a:b` and then `a%3Ab` runs to completion through pull, lease and result, each stage on its own queue', async () => {
    const colon = 'a:b';
    const encodedLookalike = 'a%3Ab';
    const planned = planPipeline(
      {
        name: 'colons',
        stages: [
          { stageName: 'first', stageHandlerName: colon },
          { stageName: 'second', stageHandlerName: encodedLookalike },
        ],
      },
      { applicationId: gw.appA.id },
    );
    if (!planned.ok) throw new Error(JSON.stringify(planned.errors));
    const pipelineId = await gw.db.$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
    const session = await gw.bootstrap('colon-worker', [colon, encodedLookalike]);
    expect(session.queues).toEqual([stageQueueName(gw.appA.id, colon), stageQueueName(gw.appA.id, encodedLookalike)]);

    await engine.run([{ kind: 'pass', pipelineId }]);
    // The first stage's message is on `a:b`'s queue only: the look-alike's queue is a different one.
    const other = await gw.call('POST', '/jobs/pull', { json: { queue: stageQueueName(gw.appA.id, encodedLookalike) }, headers: { 'x-api-key': gw.appA.key } });
    expect(other.status, other.text).toBe(204);
    const first = await runOne(session, colon);

    // Applying the result dispatches the second stage, to the look-alike's queue.
    await waitFor('second stage Pending', async () => {
      const s = await gw.db.stage.findFirst({ where: { pipelineId: BigInt(pipelineId), name: 'second' } });
      return s?.status === 'Pending' ? s : undefined;
    });
    const stray = await gw.call('POST', '/jobs/pull', { json: { queue: stageQueueName(gw.appA.id, colon) }, headers: { 'x-api-key': gw.appA.key } });
    expect(stray.status, stray.text).toBe(204);
    const second = await runOne(session, encodedLookalike);

    await waitFor('pipeline Completed', async () => ((await status(pipelineId)) === 'Completed' ? true : undefined));
    const stages = await gw.db.stage.findMany({ where: { pipelineId: BigInt(pipelineId) }, orderBy: { position: 'asc' } });
    expect(stages.map((s) => [Number(s.id), s.status])).toEqual([
      [first, 'Completed'],
      [second, 'Completed'],
    ]);
  });

  it('the sweeper’s lost-message check reads a `:` queue like any other', async () => {
    const gone = await publisher.missing([{ queue: stageQueueName(gw.appA.id, 'x:y'), executionId: '00000000-0000-4000-8000-000000000000' }]);
    expect([...gone]).toEqual(['00000000-0000-4000-8000-000000000000']);
  });
});
