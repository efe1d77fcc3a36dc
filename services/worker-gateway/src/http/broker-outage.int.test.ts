// Issue 28, decision 0120: while Redis is away the worker-gateway stays ready and serves every
// route that needs PostgreSQL only (sessions, heartbeats, leases); the pull and the result, which
// need Redis, answer 503 broker_unavailable with Retry-After instead of hanging or failing with 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageQueueName } from '@po/contracts';
import { createRedis, createStageResultsProducer, type StageResultsProducer } from '@po/queues';
import { TEST_REDIS_URL, expectProblem } from '@po/testing';
import { startWorkerGateway, type Reply, type WorkerGatewayHarness } from '../testing/harness.js';

let gw: WorkerGatewayHarness;
let brokerUp = true;
const redis = createRedis(TEST_REDIS_URL, 'producer');
let producer: StageResultsProducer;

beforeAll(async () => {
  // The broker as the gateway sees it: its connection's state, and a producer that fails fast while it is down.
  gw = await startWorkerGateway(
    {},
    {
      brokerReady: () => brokerUp,
      results: {
        publish: async (message) => {
          if (!brokerUp) throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
          await producer.publish(message);
        },
        waiting: (results) => producer.waiting(results),
        close: async () => undefined,
      },
    },
  );
  producer = createStageResultsProducer(redis, gw.prefix);
});

afterAll(async () => {
  await gw?.close();
  await producer?.close();
  await redis.quit();
});

function expectRetryLater(reply: Reply): void {
  expectProblem(reply, 503, 'broker_unavailable');
  expect(Number(reply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('a Redis outage at the worker-gateway', () => {
  it('stays ready (degraded), serves sessions, heartbeats and leases, and answers pull and result 503 with Retry-After', async () => {
    const seeded = await gw.seedDispatched(gw.appA.id, { name: 'outage', stages: [{ stageName: 's', stageHandlerName: 'outage' }] });
    const stageId = seeded.stageIds[0]!;
    const { executionId } = seeded.executions[0]!;
    const queue = stageQueueName(gw.appA.id, 'outage');
    const worker = await gw.bootstrap('outage-before', ['outage']);
    const headers = { 'x-api-key': gw.appA.key, 'x-worker-session': worker.sessionToken };
    const pulled = await gw.call('POST', '/jobs/pull', { json: { queue, waitSeconds: 0 }, headers });
    expect(pulled.status, pulled.text).toBe(200);
    const acquired = await gw.call('POST', `/stages/${stageId}/lease/acquire`, { json: { executionId, workerId: worker.workerId }, headers });
    expect(acquired.body).toMatchObject({ acquired: true, attempt: 1 });

    brokerUp = false;
    // The readiness result is kept 1 s: wait out the one taken before the outage.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const ready = await gw.call('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'degraded', checks: { postgres: 'ok', redis: 'unavailable' } });

    const renewed = await gw.call('POST', `/stages/${stageId}/lease/renew`, { json: { executionId, workerId: worker.workerId }, headers });
    expect(renewed.status, renewed.text).toBe(200);
    expect(renewed.body).toMatchObject({ acquired: true, attempt: 1 });
    const beat = await gw.call('POST', '/workers/heartbeat', { json: { workerId: worker.workerId, inFlight: 1 }, headers });
    expect(beat.status, beat.text).toBe(200);
    const another = await gw.call('POST', '/workers/bootstrap', { json: { instanceId: 'outage-during', handlers: ['outage'] }, headers: { 'x-api-key': gw.appA.key } });
    expect(another.status, another.text).toBe(200);

    expectRetryLater(await gw.call('POST', '/jobs/pull', { json: { queue, waitSeconds: 5 }, headers }));
    const result = { stageId, executionId, attempt: 1, isSuccess: true, output: 'done' };
    expectRetryLater(await gw.call('POST', `/stages/${stageId}/result`, { json: result, headers }));
    // Bad input is still answered for what it is, not with the outage.
    expectProblem(await gw.call('POST', '/jobs/pull', { json: { queue: 'app_999_x_StageNext' }, headers }), 403, 'forbidden');

    brokerUp = true;
    const accepted = await gw.call('POST', `/stages/${stageId}/result`, { json: result, headers });
    expect(accepted.status, accepted.text).toBe(202);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await gw.call('GET', '/readyz')).body).toEqual({ status: 'ready', checks: { postgres: 'ok', redis: 'ok' } });
  });
});
