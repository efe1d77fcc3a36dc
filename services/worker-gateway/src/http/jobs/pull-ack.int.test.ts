// POST /jobs/pull and POST /jobs/ack (api-spec "Worker protocol" behaviour rules 1-2, Errors,
// Limits; addendum §1, §3, §5.1, §9, §15, §17).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEmpty, expectProblem, expectValid } from '@po/testing';
import { pullJobResponseSchema, stageQueueName } from '@po/contracts';
import {
  startWorkerGateway,
  type Reply,
  type WorkerGatewayHarness,
} from '../../testing/harness.js';

// ---------------------------------------------------------------------------------------------
// Assertions shared by this file

function expectDelivery(reply: Reply, queue: string): void {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expectValid(pullJobResponseSchema, reply.body);
  expect(reply.body.queue).toBe(queue);
}

/** A fresh handler name, so every test works on its own queue. */
const handler = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

function harnessHelpers(gw: () => WorkerGatewayHarness) {
  const pull = (json: unknown, key: string | null = gw().appA.key) =>
    gw().call('POST', '/jobs/pull', { json, headers: key === null ? {} : { 'x-api-key': key } });
  const ack = (json: unknown) => gw().call('POST', '/jobs/ack', { json });
  /** Dispatches `count` stages of one pipeline of app A on handler `h`. */
  const dispatch = async (h: string, count = 1) => {
    const stages = Array.from({ length: count }, (_, i) => ({
      stageName: `s${i}`,
      stageHandlerName: h,
      input: `{"i":${i}}`,
    }));
    return gw().seedDispatched(
      gw().appA.id,
      { name: 'pull', stages },
      stages.map((_, i) => i),
    );
  };
  const queueOf = (h: string, applicationId = gw().appA.id) => stageQueueName(applicationId, h);
  return { pull, ack, dispatch, queueOf };
}

// ---------------------------------------------------------------------------------------------

describe('pull and ack (default settings)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull, ack, dispatch, queueOf } = harnessHelpers(() => gw);

  describe('POST /jobs/pull', () => {
    it('a pull from an own queue gets 200 with token, queue, the StageNextMessage payload, messageId and headers', async () => {
      const h = handler('own');
      const seeded = await dispatch(h);
      const r = await pull({ queue: queueOf(h) });
      expectDelivery(r, queueOf(h));
      expect(r.body.token).toEqual(expect.any(String));
      expect(r.body.messageId).toEqual(expect.any(String));
      expect(r.body.headers).toEqual(expect.any(Object));
      expect(Object.keys(r.body.payload).sort()).toEqual(
        [
          'applicationId',
          'pipelineId',
          'stageId',
          'executionId',
          'stageName',
          'stageHandlerName',
          'input',
          'options',
          'pipelineContextItems',
          'traceId',
          'spanId',
          'dispatchedAt',
          'timeOutSeconds',
          'previousAttempts',
        ].sort(),
      );
      expect(r.body.payload).toEqual(seeded.messages[0]);
      expect(r.body.payload).toMatchObject({
        applicationId: gw.appA.id,
        pipelineId: seeded.pipelineId,
        stageId: seeded.stageIds[0],
        stageHandlerName: h,
        input: '{"i":0}',
      });
      expect(gw.deliveries.inflight).toBe(1);
      expectEmpty(await ack({ token: r.body.token }));
      expect(gw.deliveries.inflight).toBe(0);
    });

    it('every pull hands out a new token; each message is delivered once while in flight', async () => {
      const h = handler('two');
      const seeded = await dispatch(h, 2);
      const a = await pull({ queue: queueOf(h) });
      const b = await pull({ queue: queueOf(h) });
      expectDelivery(a, queueOf(h));
      expectDelivery(b, queueOf(h));
      expect(a.body.token).not.toBe(b.body.token);
      expect(new Set([a.body.payload.executionId, b.body.payload.executionId])).toEqual(
        new Set(seeded.executions.map((e) => e.executionId)),
      );
      expectEmpty(await pull({ queue: queueOf(h) }), 204);
      expectEmpty(await ack({ token: a.body.token }));
      expectEmpty(await ack({ token: b.body.token }));
    });

    it('waitSeconds 0 (and omitted) with an empty queue answers 204 at once', async () => {
      const q = queueOf(handler('empty'));
      let started = Date.now();
      expectEmpty(await pull({ queue: q, waitSeconds: 0 }), 204);
      expect(Date.now() - started).toBeLessThan(500);
      started = Date.now();
      expectEmpty(await pull({ queue: q }), 204);
      expect(Date.now() - started).toBeLessThan(500);
    });

    it('waitSeconds 2 on an empty queue answers 204 at the deadline', async () => {
      const q = queueOf(handler('wait'));
      const started = Date.now();
      expectEmpty(await pull({ queue: q, waitSeconds: 2 }), 204);
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(1800);
      expect(took).toBeLessThan(4000);
    });

    it('a message published while a pull waits is returned promptly, well before the deadline', async () => {
      const h = handler('late');
      const started = Date.now();
      const pending = pull({ queue: queueOf(h), waitSeconds: 10 });
      await sleep(600);
      const seeded = await dispatch(h);
      const published = Date.now();
      const r = await pending;
      const arrived = Date.now();
      expectDelivery(r, queueOf(h));
      expect(r.body.payload.executionId).toBe(seeded.executions[0]!.executionId);
      expect(arrived - started).toBeGreaterThanOrEqual(550);
      // The poll runs at least every 250 ms; allow scheduling slack, far below the 10 s deadline.
      expect(arrived - published).toBeLessThan(1000);
      expectEmpty(await ack({ token: r.body.token }));
    });

    it("403 for another application's queue and for a name not of the form app_{id}_{handler}_StageNext", async () => {
      const h = handler('foreign');
      const seededB = await gw.seedDispatched(gw.appB.id, {
        name: 'b',
        stages: [{ stageName: 's', stageHandlerName: h }],
      });
      expect(seededB.executions).toHaveLength(1);
      const foreign = await pull({ queue: queueOf(h, gw.appB.id) });
      expectProblem(foreign, 403, 'forbidden');
      expect(foreign.body.instance).toBe('/jobs/pull');
      for (const queue of [
        'orders',
        `app_${gw.appA.id}__StageNext`,
        `app_${gw.appA.id}_h_stagenext`,
        `APP_${gw.appA.id}_h_StageNext`,
        `app_0${gw.appA.id}_h_StageNext`,
        `app_x_h_StageNext`,
        `${queueOf('h')}-suffix`,
      ]) {
        expectProblem(await pull({ queue }), 403, 'forbidden');
      }
      // App B's message is untouched and still there for app B.
      const own = await pull({ queue: queueOf(h, gw.appB.id) }, gw.appB.key);
      expectDelivery(own, queueOf(h, gw.appB.id));
      expectEmpty(await ack({ token: own.body.token }));
    });

    it('400 for a missing queue or waitSeconds 21, -1, "5" or 1.5', async () => {
      const q = queueOf(handler('bad'));
      expectProblem(await pull({}), 400, 'validation_failed', ['/queue']);
      expectProblem(await pull({ queue: 12 }), 400, 'validation_failed', ['/queue']);
      expectProblem(await pull({ queue: q, waitSeconds: 21 }), 400, 'validation_failed', [
        '/waitSeconds',
      ]);
      expectProblem(await pull({ queue: q, waitSeconds: -1 }), 400, 'validation_failed', [
        '/waitSeconds',
      ]);
      expectProblem(await pull({ queue: q, waitSeconds: '5' }), 400, 'validation_failed', [
        '/waitSeconds',
      ]);
      expectProblem(await pull({ queue: q, waitSeconds: 1.5 }), 400, 'validation_failed', [
        '/waitSeconds',
      ]);
      expectProblem(await pull({ waitSeconds: 21 }), 400, 'validation_failed', [
        '/queue',
        '/waitSeconds',
      ]);
      expectProblem(
        await gw.call('POST', '/jobs/pull', { raw: '[', headers: { 'x-api-key': gw.appA.key } }),
        400,
        'validation_failed',
        [''],
      );
      // Body validation comes before the queue ownership check.
      expectProblem(
        await pull({ queue: queueOf('h', gw.appB.id), waitSeconds: 21 }),
        400,
        'validation_failed',
        ['/waitSeconds'],
      );
    });

    it('401 for a missing or invalid X-API-Key, before the body', async () => {
      const q = queueOf(handler('auth'));
      expectProblem(await pull({ queue: q }, null), 401, 'unauthorized');
      expectProblem(await pull({ queue: q }, 'pos_invalid'), 401, 'unauthorized');
      expectProblem(await pull({ waitSeconds: 99 }, null), 401, 'unauthorized');
    });
  });

  describe('POST /jobs/ack', () => {
    it('ack answers 200 empty and completes the message; the same token again gets 404 not_found', async () => {
      const h = handler('ack');
      await dispatch(h);
      const r = await pull({ queue: queueOf(h) });
      expectDelivery(r, queueOf(h));
      expectEmpty(await ack({ token: r.body.token, requeue: false }));
      const again = await ack({ token: r.body.token });
      expectProblem(again, 404, 'not_found');
      expect(again.body.instance).toBe('/jobs/ack');
      // Completed: nothing comes back.
      expectEmpty(await pull({ queue: queueOf(h), waitSeconds: 0 }), 204);
    });

    it('ack of an unknown token gets 404; a missing or empty token 400', async () => {
      expectProblem(await ack({ token: 'never-handed-out' }), 404, 'not_found');
      expectProblem(await ack({}), 400, 'validation_failed', ['/token']);
      expectProblem(await ack({ token: '' }), 400, 'validation_failed', ['/token']);
      expectProblem(await ack({ token: 5 }), 400, 'validation_failed', ['/token']);
      expectProblem(await ack({ token: 'x', requeue: 'true' }), 400, 'validation_failed', [
        '/requeue',
      ]);
      expectProblem(
        await gw.call('POST', '/jobs/ack', { raw: 'token=x' }),
        400,
        'validation_failed',
        [''],
      );
    });

    it('requeue=true returns the same message at once (same messageId and executionId) to the next pull, with no new attempt', async () => {
      const h = handler('requeue');
      const seeded = await dispatch(h);
      const first = await pull({ queue: queueOf(h) });
      expectDelivery(first, queueOf(h));
      expectEmpty(await ack({ token: first.body.token, requeue: true }));
      const started = Date.now();
      const second = await pull({ queue: queueOf(h), waitSeconds: 0 });
      expect(Date.now() - started).toBeLessThan(500);
      expectDelivery(second, queueOf(h));
      expect(second.body.messageId).toBe(first.body.messageId);
      expect(second.body.payload.executionId).toBe(first.body.payload.executionId);
      expect(second.body.payload).toEqual(first.body.payload);
      expect(second.body.token).not.toBe(first.body.token);
      expectProblem(await ack({ token: first.body.token }), 404, 'not_found');
      const stage = await gw.db.stage.findUniqueOrThrow({
        where: { id: BigInt(seeded.stageIds[0]!) },
      });
      expect(stage).toMatchObject({
        status: 'Pending',
        attempt: 0,
        currentExecutionId: seeded.executions[0]!.executionId,
      });
      expectEmpty(await ack({ token: second.body.token }));
    });

    it('requeue=true wakes a pull that is already waiting on the queue', async () => {
      const h = handler('requeue-wait');
      await dispatch(h);
      const first = await pull({ queue: queueOf(h) });
      expectDelivery(first, queueOf(h));
      const waiting = pull({ queue: queueOf(h), waitSeconds: 10 });
      await sleep(300);
      const requeued = Date.now();
      expectEmpty(await ack({ token: first.body.token, requeue: true }));
      const second = await waiting;
      expect(Date.now() - requeued).toBeLessThan(1000);
      expectDelivery(second, queueOf(h));
      expect(second.body.messageId).toBe(first.body.messageId);
      expectEmpty(await ack({ token: second.body.token }));
    });
  });
});

describe('visibility timeout (GATEWAY_VISIBILITY_TIMEOUT=2)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ GATEWAY_VISIBILITY_TIMEOUT: '2' });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull, ack, dispatch, queueOf } = harnessHelpers(() => gw);

  it('an unacked delivery comes back after the visibility timeout, and its old token then gets 404', async () => {
    const h = handler('vis');
    const seeded = await dispatch(h);
    const first = await pull({ queue: queueOf(h) });
    const pulledAt = Date.now();
    expectDelivery(first, queueOf(h));
    // In flight: not visible to other pulls before the timeout.
    expectEmpty(await pull({ queue: queueOf(h), waitSeconds: 1 }), 204);
    const second = await pull({ queue: queueOf(h), waitSeconds: 8 });
    const back = Date.now() - pulledAt;
    expectDelivery(second, queueOf(h));
    expect(back).toBeGreaterThanOrEqual(1800);
    expect(back).toBeLessThan(6000);
    expect(second.body.messageId).toBe(first.body.messageId);
    expect(second.body.payload.executionId).toBe(seeded.executions[0]!.executionId);
    expect(second.body.token).not.toBe(first.body.token);
    expectProblem(await ack({ token: first.body.token }), 404, 'not_found');
    expectEmpty(await ack({ token: second.body.token }));
    expectEmpty(await pull({ queue: queueOf(h), waitSeconds: 0 }), 204);
  });

  // Runs last in this harness: it stops the periodic sweep (releaseAll), so that the ack falls
  // between the visibility timeout and the next sweep, a window of up to one sweep period.
  it('a token acked after its visibility timeout, before any sweep ran, gets 404 (not held: expired) and the message is not lost', async () => {
    await gw.deliveries.releaseAll();
    const h = handler('vis-ack');
    const seeded = await dispatch(h);
    const first = await pull({ queue: queueOf(h) });
    expectDelivery(first, queueOf(h));
    await sleep(2300);
    expectProblem(await ack({ token: first.body.token }), 404, 'not_found');
    const again = await pull({ queue: queueOf(h), waitSeconds: 5 });
    expectDelivery(again, queueOf(h));
    expect(again.body.payload.executionId).toBe(seeded.executions[0]!.executionId);
    expectEmpty(await ack({ token: again.body.token }));
  });
});

describe('in-flight limit (GATEWAY_MAX_INFLIGHT=2)', () => {
  let gw: WorkerGatewayHarness;
  beforeAll(async () => {
    gw = await startWorkerGateway({ GATEWAY_MAX_INFLIGHT: '2' });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const { pull, ack, dispatch, queueOf } = harnessHelpers(() => gw);

  it('the third pull gets 429 too_many_inflight with Retry-After: 1 before waiting; an ack frees a slot', async () => {
    const h = handler('full');
    await dispatch(h, 3);
    const a = await pull({ queue: queueOf(h) });
    const b = await pull({ queue: queueOf(h) });
    expectDelivery(a, queueOf(h));
    expectDelivery(b, queueOf(h));
    const started = Date.now();
    const third = await pull({ queue: queueOf(h), waitSeconds: 5 });
    expect(Date.now() - started).toBeLessThan(1000);
    expectProblem(third, 429, 'too_many_inflight');
    expect(third.headers.get('retry-after')).toBe('1');
    // The limit is per process, whatever the queue.
    expectProblem(
      await pull({ queue: queueOf(handler('other')), waitSeconds: 5 }),
      429,
      'too_many_inflight',
    );

    expectEmpty(await ack({ token: a.body.token }));
    const c = await pull({ queue: queueOf(h) });
    expectDelivery(c, queueOf(h));
    expect(new Set([a.body.messageId, b.body.messageId, c.body.messageId]).size).toBe(3);
    expectEmpty(await ack({ token: b.body.token }));
    expectEmpty(await ack({ token: c.body.token }));
    expect(gw.deliveries.inflight).toBe(0);
  });
});
