// Issue 29: a result is acknowledged (202) only once Redis confirmed it, with REDIS_MIN_REPLICAS_ACK
// replicas when set, and within the command timeout (REDIS_COMMAND_TIMEOUT_MS). A publish that
// cannot be confirmed either way is a broker that cannot take the result now: 503
// broker_unavailable with Retry-After, which the worker re-sends after; never a 500, never a hang.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageQueueName } from '@po/contracts';
import { createRedis, createStageResultsProducer, resultJobId, singleRedis, stageResultsQueue, type StageResultsProducer } from '@po/queues';
import { TEST_REDIS_URL, expectProblem } from '@po/testing';
import { startWorkerGateway, type Reply, type WorkerGatewayHarness } from '../testing/harness.js';
import { PrivateRedis } from '../testing/private-redis.js';

function expectRetryLater(reply: Reply): void {
  expectProblem(reply, 503, 'broker_unavailable');
  expect(Number(reply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

/** A stage of app A dispatched, delivered to and leased by a worker: its result, and the headers to post it. */
async function leasedStage(gw: WorkerGatewayHarness, handler: string) {
  const seeded = await gw.seedDispatched(gw.appA.id, { name: handler, stages: [{ stageName: 's', stageHandlerName: handler }] });
  const stageId = seeded.stageIds[0]!;
  const { executionId } = seeded.executions[0]!;
  const queue = stageQueueName(gw.appA.id, handler);
  const worker = await gw.bootstrap(`${handler}-worker`, [handler]);
  const headers = { 'x-api-key': gw.appA.key, 'x-worker-session': worker.sessionToken };
  const pulled = await gw.call('POST', '/jobs/pull', { json: { queue, waitSeconds: 0 }, headers });
  expect(pulled.status, pulled.text).toBe(200);
  const acquired = await gw.call('POST', `/stages/${stageId}/lease/acquire`, { json: { executionId, workerId: worker.workerId }, headers });
  expect(acquired.body).toMatchObject({ acquired: true, attempt: 1 });
  return { stageId, executionId, queue, worker, headers, result: { stageId, executionId, attempt: 1, isSuccess: true, output: 'done' } };
}

describe('a result that fewer replicas than REDIS_MIN_REPLICAS_ACK confirmed', () => {
  let gw: WorkerGatewayHarness;
  const redis = createRedis(TEST_REDIS_URL, 'producer');
  // The test Redis has no replicas: one required is never confirmed (WAIT answers 0).
  let required = 1;
  const producers: Partial<Record<number, StageResultsProducer>> = {};
  const producer = (): StageResultsProducer => (producers[required] ??= createStageResultsProducer(redis, gw.prefix, { minReplicasAck: required, replicaAckTimeoutMs: 100 }));

  beforeAll(async () => {
    gw = await startWorkerGateway(
      {},
      {
        results: {
          publish: (message) => producer().publish(message),
          waiting: (results) => producer().waiting(results),
          close: async () => undefined,
        },
      },
    );
  });

  afterAll(async () => {
    await gw?.close();
    await Promise.all(Object.values(producers).map((p) => p?.close()));
    await redis.quit();
  });

  it('answers 503 broker_unavailable with Retry-After; the same result re-sent once replicas confirm is accepted as one job', async () => {
    const stage = await leasedStage(gw, 'unconfirmed');
    expectRetryLater(await gw.call('POST', `/stages/${stage.stageId}/result`, { json: stage.result, headers: stage.headers }));
    expect(gw.logLines.some((l) => l.includes('result not confirmed by the broker') && l.includes('1 required Redis replicas confirmed'))).toBe(true);

    required = 0;
    const accepted = await gw.call('POST', `/stages/${stage.stageId}/result`, { json: stage.result, headers: stage.headers });
    expect(accepted.status, accepted.text).toBe(202);
    // Written by the refused post already (only its replication was not confirmed): the re-sent one is the same job.
    const jobKey = `${gw.prefix}:${stageResultsQueue(gw.appA.id)}:${resultJobId(stage.executionId, 1, stage.worker.workerId)}`;
    expect(await redis.exists(jobKey)).toBe(1);
  });
});

describe('a Redis that stops answering (SIGSTOP), with a 500 ms command timeout', () => {
  let gw: WorkerGatewayHarness;
  let server: PrivateRedis;

  beforeAll(async () => {
    server = await PrivateRedis.start();
    gw = await startWorkerGateway({}, { redis: { ...singleRedis(server.url), commandTimeoutMs: 500 } });
  });

  afterAll(async () => {
    server?.thaw();
    await gw?.close();
    await server?.stop();
  });

  it('answers result and pull 503 with Retry-After while frozen, keeps leases served, and accepts the result once thawed', async () => {
    const stage = await leasedStage(gw, 'frozen');
    server.freeze();
    try {
      // The publish waits for its command timeout, then gives up.
      expectRetryLater(await gw.call('POST', `/stages/${stage.stageId}/result`, { json: stage.result, headers: stage.headers }));
      expect(gw.logLines.some((l) => l.includes('result not confirmed by the broker') && l.includes('Command timed out'))).toBe(true);
      // The connection stays up, so the pull is refused once the gateway's PING goes unanswered.
      let pulled: Reply | undefined;
      for (let i = 0; i < 30; i += 1) {
        pulled = await gw.call('POST', '/jobs/pull', { json: { queue: stage.queue, waitSeconds: 1 }, headers: stage.headers });
        if (pulled.status === 503) break;
        expect(pulled.status, pulled.text).toBe(204);
      }
      expectRetryLater(pulled!);
      const renewed = await gw.call('POST', `/stages/${stage.stageId}/lease/renew`, { json: { executionId: stage.executionId, workerId: stage.worker.workerId }, headers: stage.headers });
      expect(renewed.status, renewed.text).toBe(200);
    } finally {
      server.thaw();
    }

    const accepted = await gw.call('POST', `/stages/${stage.stageId}/result`, { json: stage.result, headers: stage.headers });
    expect(accepted.status, accepted.text).toBe(202);
    let after: Reply | undefined;
    for (let i = 0; i < 30; i += 1) {
      after = await gw.call('POST', '/jobs/pull', { json: { queue: stage.queue, waitSeconds: 0 }, headers: stage.headers });
      if (after.status !== 503) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(after!.status, after!.text).toBe(204);
  });
});
