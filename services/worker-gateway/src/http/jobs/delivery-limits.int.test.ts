// What one worker-gateway process holds for pulls, and that one application cannot take it from
// the others (issue 10 items 2, 4, 5; addendum §15; decision 0081): bounded fetchers and queue
// names, per-application in-flight and waiting limits, a backed-off safety poll, in-flight bytes.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stageQueueName } from '@po/contracts';
import { createRedis } from '@po/queues';
import { TEST_REDIS_URL, expectProblem } from '@po/testing';
import { startWorkerGateway, type Reply, type WorkerGatewayHarness } from '../../testing/harness.js';

const handler = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

function helpers(gw: () => WorkerGatewayHarness) {
  const pull = (queue: string, waitSeconds = 0, key = gw().appA.key) =>
    gw().call('POST', '/jobs/pull', { json: { queue, waitSeconds }, headers: { 'x-api-key': key } });
  const ack = (token: string) => gw().call('POST', '/jobs/ack', { json: { token } });
  const dispatch = async (applicationId: number, h: string, input = '') =>
    gw().seedDispatched(applicationId, { name: 'limits', stages: [{ stageName: 's', stageHandlerName: h, input }] }, [0]);
  return { pull, ack, dispatch };
}

function expect429(reply: Reply): void {
  expectProblem(reply, 429, 'too_many_inflight');
  expect(reply.headers.get('retry-after')).toBe('1');
}

/** Redis clients this gateway's fetchers opened: BullMQ names its own connections `{prefix}:…`. */
async function fetcherClients(prefix: string): Promise<number> {
  const admin = createRedis(TEST_REDIS_URL, 'worker');
  try {
    const list = (await admin.client('LIST')) as string;
    return list.split('\n').filter((line) => line.includes(` name=${prefix}:`)).length;
  } finally {
    await admin.quit();
  }
}

describe('fetchers (GATEWAY_MAX_FETCHERS=4)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ GATEWAY_MAX_FETCHERS: '4' });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull, ack, dispatch } = helpers(() => gw);

  it('pulling 30 distinct queue names leaves at most 4 queues open and opens no Redis connection per queue', async () => {
    for (let i = 0; i < 30; i += 1) {
      const r = await pull(stageQueueName(gw.appA.id, handler(`many${i}`)));
      expect(r.status, r.text).toBe(204);
    }
    expect(gw.fetcher.openQueues).toBeLessThanOrEqual(4);
    expect(await fetcherClients(gw.prefix)).toBe(0);
  });

  it('a queue holding a delivery stays open while others come and go: its ack still completes the message', async () => {
    const h = handler('held');
    await dispatch(gw.appA.id, h);
    const got = await pull(stageQueueName(gw.appA.id, h));
    expect(got.status, got.text).toBe(200);
    for (let i = 0; i < 10; i += 1) expect((await pull(stageQueueName(gw.appA.id, handler(`churn${i}`)))).status).toBe(204);
    expect(gw.fetcher.openQueues).toBeLessThanOrEqual(4);
    expect((await ack(got.body.token as string)).status).toBe(200);
    expect((await pull(stageQueueName(gw.appA.id, h))).status).toBe(204);
  });

  it('with every open queue holding waiting pulls, a pull from another queue gets 429; once they answer it is served', async () => {
    const waiting = Array.from({ length: 4 }, (_, i) => pull(stageQueueName(gw.appA.id, handler(`wait${i}`)), 1));
    await sleep(200);
    expect429(await pull(stageQueueName(gw.appB.id, handler('fifth')), 0, gw.appB.key));
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([204, 204, 204, 204]);
    expect((await pull(stageQueueName(gw.appB.id, handler('fifth')), 0, gw.appB.key)).status).toBe(204);
  });

  it('a queue whose handler is longer than 300 characters is not one of the application’s queues (403)', async () => {
    expect((await pull(stageQueueName(gw.appA.id, 'h'.repeat(300)))).status).toBe(204);
    expect((await pull(stageQueueName(gw.appA.id, '😀'.repeat(300)))).status).toBe(204);
    expectProblem(await pull(stageQueueName(gw.appA.id, 'h'.repeat(301))), 403, 'forbidden');
    expectProblem(await pull(stageQueueName(gw.appA.id, 'h'.repeat(20_000))), 403, 'forbidden');
  });
});

describe('per-application limits (GATEWAY_MAX_INFLIGHT_PER_APP=2, GATEWAY_MAX_WAITING_PER_APP=2)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ GATEWAY_MAX_INFLIGHT_PER_APP: '2', GATEWAY_MAX_WAITING_PER_APP: '2' });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull, ack, dispatch } = helpers(() => gw);

  it('application A holding its maximum of unacked deliveries gets 429 with Retry-After; application B still pulls its message', async () => {
    const hA = handler('a');
    for (let i = 0; i < 3; i += 1) await dispatch(gw.appA.id, hA);
    const held = [await pull(stageQueueName(gw.appA.id, hA)), await pull(stageQueueName(gw.appA.id, hA))];
    expect(held.map((r) => r.status)).toEqual([200, 200]);
    expect429(await pull(stageQueueName(gw.appA.id, hA)));
    expect429(await pull(stageQueueName(gw.appA.id, handler('other-a')), 5));

    const hB = handler('b');
    await dispatch(gw.appB.id, hB);
    const b = await pull(stageQueueName(gw.appB.id, hB), 0, gw.appB.key);
    expect(b.status, b.text).toBe(200);
    expect(b.body.payload.applicationId).toBe(gw.appB.id);

    // An ack gives A its slot back.
    expect((await ack(held[0]!.body.token as string)).status).toBe(200);
    const third = await pull(stageQueueName(gw.appA.id, hA));
    expect(third.status).toBe(200);
    for (const r of [held[1]!, third, b]) expect((await ack(r.body.token as string)).status).toBe(200);
  });

  it('application A with its maximum of waiting pulls gets 429; application B still waits and gets its message', async () => {
    const waitingA = [pull(stageQueueName(gw.appA.id, handler('wa1')), 2), pull(stageQueueName(gw.appA.id, handler('wa2')), 2)];
    await sleep(200);
    expect429(await pull(stageQueueName(gw.appA.id, handler('wa3')), 1));

    const hB = handler('wb');
    const waitingB = pull(stageQueueName(gw.appB.id, hB), 5, gw.appB.key);
    await sleep(200);
    await dispatch(gw.appB.id, hB);
    const b = await waitingB;
    expect(b.status, b.text).toBe(200);
    expect((await Promise.all(waitingA)).map((r) => r.status)).toEqual([204, 204]);
  });
});

describe('safety poll', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull } = helpers(() => gw);

  it('an idle waiting pull costs a few fetches over 4 seconds, not one per 250 ms', async () => {
    const queue = stageQueueName(gw.appA.id, handler('idle'));
    const fetch = vi.spyOn(gw.fetcher, 'fetch');
    try {
      expect((await pull(queue, 4)).status).toBe(204);
      // Every 250 ms would be 17 fetches; backing off from 250 ms to 2 s is 5.
      expect(fetch.mock.calls.filter(([q]) => q === queue).length).toBeLessThanOrEqual(6);
    } finally {
      fetch.mockRestore();
    }
  });
});

describe('in-flight bytes (GATEWAY_MAX_INFLIGHT_BYTES=100000)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ GATEWAY_MAX_INFLIGHT_BYTES: '100000' });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull, ack, dispatch } = helpers(() => gw);

  it('a message larger than the bound is delivered when nothing else is held; then every pull gets 429 until it is acked', async () => {
    const big = handler('big');
    const small = handler('small');
    await dispatch(gw.appA.id, big, 'x'.repeat(200_000));
    await dispatch(gw.appB.id, small, 'y');
    const got = await pull(stageQueueName(gw.appA.id, big));
    expect(got.status, got.text).toBe(200);
    expect(got.body.payload.input).toHaveLength(200_000);
    expect429(await pull(stageQueueName(gw.appB.id, small), 0, gw.appB.key));
    expect((await ack(got.body.token as string)).status).toBe(200);
    expect((await pull(stageQueueName(gw.appB.id, small), 0, gw.appB.key)).status).toBe(200);
  });

  it('messages are held up to about the bound: the one that crosses it goes out, the next pull gets 429', async () => {
    const h = handler('mid');
    for (let i = 0; i < 3; i += 1) await dispatch(gw.appA.id, h, 'z'.repeat(60_000));
    const first = await pull(stageQueueName(gw.appA.id, h));
    const second = await pull(stageQueueName(gw.appA.id, h));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect429(await pull(stageQueueName(gw.appA.id, h)));
    for (const r of [first, second]) expect((await ack(r.body.token as string)).status).toBe(200);
  });
});
