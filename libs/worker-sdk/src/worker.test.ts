// The execution protocol against a fake gateway: lease, handler, result, ack.
import { describe, expect, it } from 'vitest';
import { API_KEY } from './fake-gateway.test-support.js';
import { LeaseLostError, StageError, StageTimeoutError } from './index.js';
import type { HandlerContext } from './index.js';
import { delay, refusal, useHarness } from './test-helpers.test-support.js';

const h = useHarness();

describe('bootstrap and pull', () => {
  it('bootstraps with the API key and its handlers, then pulls each queue with the key', async () => {
    const { gw } = h;
    const worker = await h.start({ a: () => 'a', b: () => 'b' }, { concurrency: 2 });
    const [boot] = gw.calls('/workers/bootstrap');
    expect(boot?.headers['x-api-key']).toBe(API_KEY);
    expect(boot?.body).toMatchObject({ instanceId: 'test-worker', handlers: ['a', 'b'] });
    expect(worker.stats.queues).toEqual([gw.queueOf('a'), gw.queueOf('b')]);
    await gw.until(() => gw.calls('/jobs/pull').length >= 2);
    const pulls = gw.calls('/jobs/pull').slice(0, 2);
    expect(pulls.map((p) => p.body)).toEqual([
      { queue: gw.queueOf('a'), waitSeconds: 1, lease: { workerId: 'worker-id-1' } },
      { queue: gw.queueOf('b'), waitSeconds: 1, lease: { workerId: 'worker-id-1' } },
    ]);
    expect(pulls.every((p) => p.headers['x-api-key'] === API_KEY)).toBe(true);
    // The session rides along on pull (and ack) so header-hash routing keeps them on one gateway.
    expect(pulls.every((p) => p.headers['x-worker-session'] === gw.sessionToken)).toBe(true);
  });
});

describe('one delivery', () => {
  it('acks without running the handler when the lease is refused', async () => {
    const { gw } = h;
    let ran = 0;
    gw.on('acquire', () => refusal('lease_held'));
    await h.start({ job: () => void ran++ });
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(gw.acks[0]).toMatchObject({ requeue: false, stageId: message.stageId });
    expect(gw.calls('/jobs/ack')[0]?.headers['x-worker-session']).toBe(gw.sessionToken);
    expect(ran).toBe(0);
    expect(gw.calls(/\/result$/)).toHaveLength(0);
    const [acquire] = gw.calls(`/stages/${message.stageId}/lease/acquire`);
    expect(acquire?.headers['x-worker-session']).toBe(gw.sessionToken);
    expect(acquire?.body).toEqual({ executionId: message.executionId, workerId: 'worker-id-1' });
  });

  it('posts the result with the lease attempt, and acks only after the 202', async () => {
    const { gw } = h;
    let seen: HandlerContext | undefined;
    gw.on('result', () => ({
      status: 202,
      body: { accepted: true, stageId: 1, executionId: 'x' },
      delayMs: 150,
    }));
    await h.start({
      job: (ctx) => {
        seen = ctx;
        ctx.log('working on it');
        ctx.setContext('next', { n: 1 }, { sensitive: true });
        ctx.deleteContext('old');
        ctx.appendStages([{ stageName: 'more', stageHandlerName: 'job' }]);
        return { echoed: ctx.json<{ n: number }>().n };
      },
    });
    const message = gw.enqueue('job', {
      input: '{"n":5}',
      pipelineContextItems: [
        { key: 'old', value: 'v', valueType: null, isSensitive: false, isDeleted: false },
      ],
    });
    gw.attempts.set(message.stageId, 2); // two earlier leases: this one is attempt 3
    await gw.until(() => gw.acks.length === 1);

    expect(seen?.stage).toMatchObject({
      stageId: message.stageId,
      attempt: 3,
      handler: 'job',
      previousAttempts: 0,
    });
    expect(seen?.context).toEqual({ next: '{"n":1}' }); // the handler's own changes show at once
    expect(seen?.headers).toEqual({ h: 'v' });
    const [result] = gw.calls(`/stages/${message.stageId}/result`);
    expect(result?.headers['x-api-key']).toBe(API_KEY);
    expect(result?.headers['x-worker-session']).toBe(gw.sessionToken);
    expect(result?.body).toMatchObject({
      stageId: message.stageId,
      executionId: message.executionId,
      attempt: 3,
      pipelineId: message.pipelineId,
      isSuccess: true,
      isWaitingForApproval: false,
      result: '{"echoed":5}',
      logs: [{ message: 'working on it', logLevel: 'Information' }],
      contextItems: [
        { key: 'next', value: '{"n":1}', isSensitive: true },
        { key: 'old', isDeleted: true },
      ],
      appendedStages: [{ stageName: 'more', stageHandlerName: 'job' }],
    });
    const [ack] = gw.calls('/jobs/ack');
    expect(ack?.receivedAt).toBeGreaterThanOrEqual(result?.respondedAt ?? Infinity);
    expect(gw.acks[0]).toMatchObject({ requeue: false, stageId: message.stageId });
  });

  it('posts the same body again after 503 and a timeout, running the handler once', async () => {
    const { gw } = h;
    let ran = 0;
    let answered = 0;
    gw.on('result', () => {
      answered += 1;
      if (answered === 1) return { status: 503, body: { code: 'broker_unavailable' } };
      if (answered === 2) return { status: 202, delayMs: 400 }; // the client gives up first
      return undefined;
    });
    await h.start({ job: () => `run ${++ran}` }, { requestTimeoutMs: 200 });
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    const results = gw.calls(`/stages/${message.stageId}/result`);
    expect(results).toHaveLength(3);
    expect(results[1]?.body).toEqual(results[0]?.body);
    expect(results[2]?.body).toEqual(results[0]?.body);
    expect(results[0]?.body).toMatchObject({ result: 'run 1', attempt: 1 });
    expect(ran).toBe(1);
    const [ack] = gw.calls('/jobs/ack');
    expect(ack?.receivedAt).toBeGreaterThanOrEqual(results[2]?.respondedAt ?? Infinity);
  });

  it('aborts ctx.signal when a renewal is refused, posts no result, and acks', async () => {
    const { gw } = h;
    let reason: unknown;
    gw.on('renew', () => refusal('pipeline_cancelled'));
    await h.start(
      {
        job: async (ctx) => {
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          reason = ctx.signal.reason;
          return 'too late';
        },
      },
      { leaseRenewIntervalMs: 30 },
    );
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect((reason as LeaseLostError).reason).toBe('pipeline_cancelled');
    expect(gw.calls(/\/result$/)).toHaveLength(0);
    expect(gw.acks[0]).toMatchObject({ requeue: false, stageId: message.stageId });
    await gw.until(() =>
      gw
        .calls('/workers/events')
        .some((e) => e.body.events.some((x: { kind: string }) => x.kind === 'lease_lost')),
    );
  });

  it('renews the lease in the background while the handler runs', async () => {
    const { gw } = h;
    await h.start({ job: () => delay(200).then(() => 'ok') }, { leaseRenewIntervalMs: 40 });
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    const renewals = gw.calls(`/stages/${message.stageId}/lease/renew`);
    expect(renewals.length).toBeGreaterThanOrEqual(2);
    expect(renewals[0]?.body).toEqual({
      executionId: message.executionId,
      workerId: 'worker-id-1',
    });
  });
});

describe('lease on pull and ack with the result (decision 0098)', () => {
  it('with a gateway that answers both, a stage costs a pull and a result: no acquire, no ack call', async () => {
    const { gw } = h;
    gw.extensions = true;
    let attempt = 0;
    await h.start({
      job: (ctx) => {
        attempt = ctx.stage.attempt;
        return 'done';
      },
    });
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(attempt).toBe(1);
    expect(gw.calls(/\/lease\/acquire$/)).toHaveLength(0);
    expect(gw.calls('/jobs/ack')).toHaveLength(0);
    const [result] = gw.calls(`/stages/${message.stageId}/result`);
    expect(result?.body).toMatchObject({ attempt: 1, isSuccess: true, ackToken: expect.stringMatching(/^tok-/) });
    expect(gw.acks[0]).toEqual({ token: result?.body.ackToken, requeue: false, stageId: message.stageId });
  });

  it('a lease refused on the pull acks the delivery without running the handler', async () => {
    const { gw } = h;
    gw.extensions = true;
    let ran = 0;
    gw.pullLease = () => refusal('lease_held').body;
    await h.start({ job: () => void ran++ });
    gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(ran).toBe(0);
    expect(gw.calls(/\/lease\/acquire$/)).toHaveLength(0);
    expect(gw.acks[0]).toMatchObject({ requeue: false });
  });

  it('acked false (the token is not held there) sends no ack of its own; an older gateway (no acked) gets one', async () => {
    const { gw } = h;
    gw.on('result', (req) => ({ status: 202, body: { accepted: true, stageId: req.body.stageId, executionId: req.body.executionId, acked: false } }));
    await h.start({ job: () => 'done' });
    gw.enqueue('job');
    await gw.until(() => gw.calls(/\/result$/).some((r) => r.status === 202));
    await delay(100);
    expect(gw.calls('/jobs/ack')).toHaveLength(0);
    // Without the override the fake answers like a gateway that ignores ackToken: the SDK acks.
    gw.on('result', () => undefined);
    gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(gw.calls('/jobs/ack')).toHaveLength(1);
  });
});

describe('the next pull with the result (decision 0100)', () => {
  it('with a backlog, each result brings the next delivery: one pull for three stages, no ack calls', async () => {
    const { gw } = h;
    gw.extensions = true;
    const messages = [gw.enqueue('job'), gw.enqueue('job'), gw.enqueue('job')];
    const ran: number[] = [];
    await h.start({ job: (ctx) => void ran.push(ctx.stage.stageId) }, { concurrency: 1 });
    await gw.until(() => gw.acks.length === 3);
    expect(ran).toEqual(messages.map((m) => m.stageId));
    expect(gw.calls('/jobs/pull').filter((p) => p.status === 200)).toHaveLength(1);
    expect(gw.calls('/jobs/ack')).toHaveLength(0);
    expect(gw.calls(/\/lease\/acquire$/)).toHaveLength(0);
    const results = messages.map((m) => gw.calls(`/stages/${m.stageId}/result`)[0]?.body);
    // Each result asked for the next delivery of the queue, with its lease; the last found none.
    for (const body of results) {
      expect(body?.next).toEqual({ queue: gw.queueOf('job'), lease: { workerId: 'worker-id-1' } });
    }
    expect(gw.acks.map((a) => a.requeue)).toEqual([false, false, false]);
  });

  it('a delivery the pull waited for carries no next: the queue was empty, so a pull would only find it empty', async () => {
    const { gw } = h;
    gw.extensions = true;
    await h.start({ job: () => 'done' }, { concurrency: 1 });
    await gw.until(() => gw.calls('/jobs/pull').length >= 1);
    await delay(120);
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(gw.calls(`/stages/${message.stageId}/result`)[0]?.body.next).toBeUndefined();
  });

  it('a delivery the pull waited for a place for (backlog: true, decision 0132) carries next all the same', async () => {
    const { gw } = h;
    gw.extensions = true;
    gw.waitedForPlace = true;
    await h.start({ job: () => 'done' }, { concurrency: 1 });
    await gw.until(() => gw.calls('/jobs/pull').length >= 1);
    await delay(120);
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    expect(gw.calls(`/stages/${message.stageId}/result`)[0]?.body.next).toEqual({ queue: gw.queueOf('job'), lease: { workerId: 'worker-id-1' } });
  });

  it('a gateway that ignores next (no acked, no next) still gets every stage through its pulls', async () => {
    const { gw } = h;
    const messages = [gw.enqueue('job'), gw.enqueue('job')];
    await h.start({ job: () => 'done' }, { concurrency: 1 });
    await gw.until(() => gw.acks.length === 2);
    expect(gw.calls('/jobs/pull').filter((p) => p.status === 200)).toHaveLength(2);
    expect(gw.calls('/jobs/ack')).toHaveLength(2);
    expect(messages.map((m) => gw.calls(`/stages/${m.stageId}/result`)).every((r) => r.length === 1)).toBe(true);
  });
});

describe('handler outcomes', () => {
  async function outcome(handler: (ctx: HandlerContext) => unknown, fields = {}) {
    const { gw } = h;
    await h.start({ job: handler });
    const message = gw.enqueue('job', fields);
    await gw.until(() => gw.acks.length === 1);
    return gw.calls(`/stages/${message.stageId}/result`)[0]?.body;
  }

  it('a StageError fails the stage with its code, retryable flag and message', async () => {
    const body = await outcome(() => {
      throw new StageError('PAYMENT_DECLINED', 'card refused', { retryable: false });
    });
    expect(body).toMatchObject({
      isSuccess: false,
      errorCode: 'PAYMENT_DECLINED',
      retryable: false,
    });
    expect(body.logs).toEqual([
      expect.objectContaining({ message: 'PAYMENT_DECLINED: card refused', logLevel: 'Error' }),
    ]);
  });

  it('any other error is HANDLER_ERROR', async () => {
    const body = await outcome(() => Promise.reject(new Error('boom')));
    expect(body).toMatchObject({ isSuccess: false, errorCode: 'HANDLER_ERROR' });
    expect(body).not.toHaveProperty('retryable');
  });

  it("an error's string code becomes the errorCode", async () => {
    const body = await outcome(() => {
      throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    });
    expect(body).toMatchObject({ isSuccess: false, errorCode: 'ECONNRESET' });
  });

  it('awaitApproval parks the stage', async () => {
    const body = await outcome((ctx) => ctx.awaitApproval({ amount: 3 }));
    expect(body).toMatchObject({
      isSuccess: true,
      isWaitingForApproval: true,
      result: '{"amount":3}',
    });
  });

  it('returning undefined sends no result', async () => {
    const body = await outcome(() => undefined);
    expect(body).toMatchObject({ isSuccess: true, isWaitingForApproval: false });
    expect(body).not.toHaveProperty('result');
  });

  it('the stage timeout aborts ctx.signal and fails with TIMEOUT', async () => {
    let reason: unknown;
    const body = await outcome(
      async (ctx) => {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        reason = ctx.signal.reason;
        ctx.signal.throwIfAborted();
      },
      { timeOutSeconds: 1 },
    );
    expect(reason).toBeInstanceOf(StageTimeoutError);
    expect(body).toMatchObject({ isSuccess: false, errorCode: 'TIMEOUT' });
  });
});
