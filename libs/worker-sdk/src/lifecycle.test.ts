// Worker lifecycle against a fake gateway: concurrency, drain, sessions, back-off.
import { describe, expect, it } from 'vitest';
import { API_KEY } from './fake-gateway.test-support.js';
import { createWorker, WorkerConfigError, WorkerStoppingError } from './index.js';
import type { WorkerOptions } from './index.js';
import { delay, gate, useHarness } from './test-helpers.test-support.js';

const h = useHarness();

type Kinds = { body: { events: { kind: string }[] } }[];
const eventKinds = (calls: Kinds) => calls.flatMap((c) => c.body.events.map((e) => e.kind));

describe('concurrency', () => {
  it('runs at most `concurrency` handlers and pulls only while a slot is free', async () => {
    const { gw } = h;
    const release = gate();
    let running = 0;
    let max = 0;
    await h.start(
      {
        job: async () => {
          running += 1;
          max = Math.max(max, running);
          await release.promise;
          await delay(10);
          running -= 1;
          return 'ok';
        },
      },
      { concurrency: 2 },
    );
    for (let i = 0; i < 5; i++) gw.enqueue('job');
    await gw.until(() => running === 2);
    await delay(100);
    expect(running).toBe(2);
    expect(gw.pendingPulls).toBe(0); // both slots busy: nobody is pulling
    expect(gw.calls('/jobs/pull')).toHaveLength(2);
    release.open();
    await gw.until(() => gw.acks.length === 5);
    expect(max).toBe(2);
    expect(gw.acks.every((a) => !a.requeue)).toBe(true);
  });
});

describe('stop', () => {
  it('drains: stops pulling, lets the running handler finish, then sends shutdown', async () => {
    const { gw } = h;
    const started = gate();
    const worker = await h.start({
      job: async () => {
        started.open();
        await delay(150);
        return 'done';
      },
    });
    const message = gw.enqueue('job');
    await started.promise;
    const pullsBefore = gw.calls('/jobs/pull').length;
    await worker.stop({ reason: 'deploy' });
    expect(worker.state).toBe('stopped');
    expect(gw.calls('/jobs/pull')).toHaveLength(pullsBefore);
    const result = gw.calls(`/stages/${message.stageId}/result`)[0];
    const ack = gw.calls('/jobs/ack')[0];
    const [shutdown] = gw.calls('/workers/shutdown');
    expect(result?.body).toMatchObject({ isSuccess: true, result: 'done' });
    expect(shutdown?.body).toEqual({ workerId: 'worker-id-1', reason: 'deploy' });
    expect(shutdown?.headers['x-worker-session']).toBe(gw.sessionToken);
    expect(shutdown?.seq).toBeGreaterThan(ack?.seq ?? Infinity);
    const kinds = eventKinds(gw.calls('/workers/events'));
    expect(kinds).toEqual(
      expect.arrayContaining([
        'started',
        'stage_started',
        'stage_completed',
        'stopping',
        'stopped',
      ]),
    );
    expect(kinds.indexOf('stopped')).toBeGreaterThan(kinds.indexOf('stage_completed'));
    expect(worker.stats).toMatchObject({ processed: 1, failed: 0, inFlight: 0 });
  });

  it('aborts handlers still running after the drain timeout', async () => {
    const { gw } = h;
    const started = gate();
    let reason: unknown;
    const worker = await h.start({
      job: async (ctx) => {
        started.open();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        reason = ctx.signal.reason;
        ctx.signal.throwIfAborted();
      },
    });
    const message = gw.enqueue('job');
    await started.promise;
    await worker.stop({ timeoutMs: 50 });
    expect(reason).toBeInstanceOf(WorkerStoppingError);
    expect(gw.calls(`/stages/${message.stageId}/result`)[0]?.body).toMatchObject({
      isSuccess: false,
      errorCode: 'WORKER_STOPPING',
    });
    expect(gw.acks).toHaveLength(1);
    expect(gw.calls('/workers/shutdown')).toHaveLength(1);
  });

  it('gives up re-sending a result once stop() is done waiting', async () => {
    const { gw } = h;
    gw.on('result', () => ({ status: 503, body: { code: 'broker_unavailable' } }));
    const worker = await h.start(
      { job: () => 'ok' },
      { retryBaseDelayMs: 20, retryMaxDelayMs: 20 },
    );
    const message = gw.enqueue('job');
    await gw.until(() => gw.calls(/\/result$/).length >= 2);
    const began = Date.now();
    await worker.stop({ timeoutMs: 50 });
    expect(Date.now() - began).toBeLessThan(1000);
    expect(gw.calls('/workers/shutdown')).toHaveLength(1);
    await gw.until(() => gw.acks.length === 1); // abandoned: acked so it is not held in flight
    expect(gw.acks[0]).toMatchObject({ stageId: message.stageId, requeue: false });
    expect(worker.stats.failed).toBe(1);
  });

  it('stop() before start() does nothing; start() after stop() is refused', async () => {
    const worker = createWorker({
      baseUrl: h.gw.url,
      apiKey: API_KEY,
      instanceId: 'x',
      handlers: { a: () => 1 },
    });
    await worker.stop();
    expect(worker.state).toBe('stopped');
    await expect(worker.start()).rejects.toThrow(/idle/);
    expect(h.gw.requests).toHaveLength(0);
  });
});

describe('sessions and back-off', () => {
  it('re-bootstraps when a heartbeat answers 401, then heartbeats with the new session', async () => {
    const { gw } = h;
    await h.start({ job: () => 'ok' }, { heartbeatIntervalMs: 30 });
    await gw.until(() => gw.calls('/workers/heartbeat').length >= 1);
    gw.sessionToken = 'expired-elsewhere';
    await gw.until(() => gw.calls('/workers/bootstrap').length === 2);
    await gw.until(() =>
      gw
        .calls('/workers/heartbeat')
        .some((c) => c.status === 200 && c.headers['x-worker-session'] === 'sess-2'),
    );
    const beat = gw.calls('/workers/heartbeat').at(-1);
    expect(beat?.body).toEqual({ workerId: 'worker-id-1', inFlight: 0, processed: 0, failed: 0 });
  });

  it('re-bootstraps when the result answers 401 and posts the same body with the new session', async () => {
    const { gw } = h;
    let ran = 0;
    await h.start({ job: () => `r${++ran}` });
    gw.on('result', (req, g) =>
      req.headers['x-worker-session'] === 'sess-1'
        ? ((g.sessionToken = ''), { status: 401 })
        : undefined,
    );
    const message = gw.enqueue('job');
    await gw.until(() => gw.acks.length === 1);
    const results = gw.calls(`/stages/${message.stageId}/result`);
    expect(results.map((r) => [r.status, r.headers['x-worker-session']])).toEqual([
      [401, 'sess-1'],
      [202, 'sess-2'],
    ]);
    expect(results[1]?.body).toEqual(results[0]?.body);
    expect(ran).toBe(1);
  });

  it('backs off for Retry-After when a pull answers 429', async () => {
    const { gw } = h;
    let answered = 0;
    gw.on('pull', () =>
      answered++ === 0
        ? { status: 429, headers: { 'retry-after': '1' }, body: { code: 'too_many_inflight' } }
        : undefined,
    );
    await h.start({ job: () => 'ok' }, { waitSeconds: 0 });
    await gw.until(() => gw.calls('/jobs/pull').length >= 2);
    const [first, second] = gw.calls('/jobs/pull');
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('start() rejects at once when the API key is refused', async () => {
    const worker = createWorker({
      baseUrl: h.gw.url,
      apiKey: 'wrong',
      instanceId: 'x',
      handlers: { a: () => 1 },
      logger: { info() {}, warn() {}, error() {} },
    });
    await expect(worker.start()).rejects.toMatchObject({ name: 'ApiError', status: 401 });
    expect(worker.state).toBe('stopped');
  });
});

describe('options', () => {
  it('lists every problem at once', () => {
    const bad = {
      baseUrl: 'ftp://x',
      apiKey: '',
      instanceId: '',
      handlers: { a: 'nope' },
      concurrency: 0,
      waitSeconds: 21,
    };
    let error: unknown;
    try {
      createWorker(bad as unknown as WorkerOptions);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(WorkerConfigError);
    const problems = (error as WorkerConfigError).problems.join('\n');
    for (const word of [
      'baseUrl',
      'apiKey',
      'instanceId',
      'handlers["a"]',
      'concurrency',
      'waitSeconds',
    ]) {
      expect(problems).toContain(word);
    }
  });

  it('sends worker calls to workerBaseUrl when given', async () => {
    const worker = await h.start(
      { a: () => 1 },
      { baseUrl: 'http://127.0.0.1:9', workerBaseUrl: `${h.gw.url}/` },
    );
    expect(worker.state).toBe('running');
    expect(h.gw.calls('/workers/bootstrap')).toHaveLength(1);
  });
});
