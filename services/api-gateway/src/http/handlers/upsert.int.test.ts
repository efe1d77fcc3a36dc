// PUT /handlers/{name} (issue 31, decision 0132): creates a handler's settings before any stage
// names it, merges absent members, null clears a limit, per-field 400s; a pause pauses the
// handler's StageNext queue in Redis and a resume resumes it; a loosening change wakes the
// pipeline of the handler's oldest Throttled stage.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, handlerViewSchema, limits, stageQueueName, type HandlerView } from '@po/contracts';
import { stageNextBullName, stageNextQueueStates, type PipelineEvent, type PipelineEventsProducer } from '@po/queues';
import { expectProblem } from '@po/testing';
import { startGateway, type Gateway } from '../../testing/harness.js';
import { seedPipeline, seedStage } from '../../testing/handler-rows.js';

let gw: Gateway;
const published: Omit<PipelineEvent, 'at'>[] = [];
const events: PipelineEventsProducer = {
  publish: async (event) => void published.push(event),
  publishMany: async (many) => void published.push(...many),
  publishDelayed: async () => undefined,
  close: async () => undefined,
};
const shape = compile(handlerViewSchema, { normalise: false });

beforeAll(async () => {
  gw = await startGateway({ events });
});
afterAll(async () => {
  await gw?.close();
});

const path = (name: string) => `/handlers/${encodeURIComponent(name)}`;

async function put(name: string, json: unknown, key = gw.appA.key): Promise<HandlerView> {
  const reply = await gw.call('PUT', path(name), { json, key });
  expect(reply.status, reply.text).toBe(200);
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as HandlerView;
}

describe('PUT /handlers/{name}', () => {
  it('creates the settings of a handler no stage names yet, with the defaults for absent members', async () => {
    const created = await put('payments', { maxConcurrent: 5 });
    expect(created).toMatchObject({
      name: 'payments',
      paused: false,
      maxConcurrent: 5,
      maxPerSecond: null,
      configured: true,
      backlog: 0,
      throttled: 0,
      pending: 0,
      running: 0,
      oldestWaitingSeconds: null,
    });
    expect(created.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const read = await gw.call('GET', path('payments'));
    expect(read.body).toEqual(created);
  });

  it('keeps the stored value of an absent member, and null clears a limit', async () => {
    await put('merge', { paused: true, maxConcurrent: 3, maxPerSecond: 2.5 });
    expect(await put('merge', { maxPerSecond: 10 })).toMatchObject({ paused: true, maxConcurrent: 3, maxPerSecond: 10 });
    expect(await put('merge', {})).toMatchObject({ paused: true, maxConcurrent: 3, maxPerSecond: 10 });
    expect(await put('merge', { maxConcurrent: null })).toMatchObject({ paused: true, maxConcurrent: null, maxPerSecond: 10 });
    expect(await put('merge', { paused: false, maxPerSecond: null, note: 'unknown members are ignored' })).toMatchObject({
      paused: false,
      maxConcurrent: null,
      maxPerSecond: null,
      configured: true,
    });
  });

  it('a changed rate starts its bucket again, full (the engine fills an unused one); an unchanged one keeps it', async () => {
    const A = gw.appA.id;
    await put('bucket', { maxPerSecond: 5 });
    await gw.db.$executeRawUnsafe(`UPDATE handler_settings SET tokens = 0.25, tokens_at = now() - interval '1 minute' WHERE application_id = $1 AND handler_name = 'bucket'`, A);
    await put('bucket', { maxPerSecond: 5, maxConcurrent: 2 });
    const bucket = () =>
      gw.db.$queryRawUnsafe<{ tokens: number; unused: boolean }[]>(
        `SELECT tokens, tokens_at IS NULL AS unused FROM handler_settings WHERE application_id = $1 AND handler_name = 'bucket'`,
        A,
      );
    expect(await bucket()).toEqual([{ tokens: 0.25, unused: false }]);
    await put('bucket', { maxPerSecond: 20 });
    expect(await bucket()).toEqual([{ tokens: 0, unused: true }]);
  });

  it('answers 400 problem+json with a message per bad member', async () => {
    const bad = await gw.call('PUT', path('invalid'), { json: { paused: 'yes', maxConcurrent: 0, maxPerSecond: 0 } });
    expectProblem(bad, 400, 'validation_failed', ['/paused', '/maxConcurrent', '/maxPerSecond']);
    const over = await gw.call('PUT', path('invalid'), {
      json: { maxConcurrent: limits.handlerMaxConcurrentMax + 1, maxPerSecond: limits.handlerMaxPerSecondMax + 1 },
    });
    expectProblem(over, 400, 'validation_failed', ['/maxConcurrent', '/maxPerSecond']);
    expectProblem(await gw.call('PUT', path('invalid'), { json: { maxConcurrent: 2.5 } }), 400, 'validation_failed', ['/maxConcurrent']);
    expectProblem(await gw.call('PUT', path('invalid'), { json: [] }), 400, 'validation_failed', ['']);
    expectProblem(await gw.call('PUT', path('x'.repeat(301)), { json: {} }), 400, 'validation_failed', ['name']);
    // Nothing was stored by a refused request.
    expectProblem(await gw.call('GET', path('invalid')), 404, 'not_found');
  });

  it('needs an API key', async () => {
    expect((await gw.call('PUT', path('payments'), { json: {}, key: null })).status).toBe(401);
  });

  it("sets the handler's maxConcurrent as its StageNext queue's places in Redis, and removes them with null", async () => {
    const name = 'limit:{eu}%';
    const limitOf = async (app: number) => (await stageNextQueueStates(gw.redis, gw.prefix, [stageQueueName(app, name)]))[0]!.concurrency;
    await put(name, { maxConcurrent: 4 });
    expect(await limitOf(gw.appA.id)).toBe(4);
    // A change without the member leaves it; application B's queue of the same handler is its own.
    await put(name, { paused: false });
    expect(await limitOf(gw.appA.id)).toBe(4);
    expect(await limitOf(gw.appB.id)).toBeNull();
    await put(name, { maxConcurrent: null });
    expect(await limitOf(gw.appA.id)).toBeNull();
  });

  it('pauses the handler StageNext queue in Redis, and resumes it', async () => {
    const name = 'pay:{eu}%';
    const queue = new Queue(stageNextBullName(stageQueueName(gw.appA.id, name)), { connection: gw.redis, prefix: gw.prefix });
    try {
      await put(name, { paused: true });
      expect(await queue.isPaused()).toBe(true);
      // Application B's queue of the same handler is its own.
      const other = new Queue(stageNextBullName(stageQueueName(gw.appB.id, name)), { connection: gw.redis, prefix: gw.prefix });
      expect(await other.isPaused()).toBe(false);
      await other.close();
      await put(name, { paused: false });
      expect(await queue.isPaused()).toBe(false);
    } finally {
      await queue.close();
    }
  });

  it('a resume, a raised or a cleared limit wakes the pipeline of the oldest Throttled stage; tightening does not', async () => {
    const A = gw.appA.id;
    await put('waking', { paused: true, maxConcurrent: 1, maxPerSecond: 1 });
    const older = await seedPipeline(gw, A);
    const newer = await seedPipeline(gw, A);
    await seedStage(gw, A, older, 'waking', 'Throttled');
    await seedStage(gw, A, newer, 'waking', 'Throttled');
    const wakes = async (body: unknown) => {
      published.length = 0;
      await put('waking', body);
      return published.map((e) => [e.type, e.pipelineId]);
    };
    expect(await wakes({ maxConcurrent: 1 })).toEqual([]);
    expect(await wakes({ paused: false })).toEqual([['pipeline.wake', older]]);
    expect(await wakes({ paused: true })).toEqual([]);
    expect(await wakes({ maxConcurrent: 2 })).toEqual([['pipeline.wake', older]]);
    expect(await wakes({ maxConcurrent: 1 })).toEqual([]);
    expect(await wakes({ maxPerSecond: null })).toEqual([['pipeline.wake', older]]);
    expect(await wakes({ maxPerSecond: 3 })).toEqual([]);
    expect(published).toEqual([]);
  });
});
