// GET /handlers and GET /handlers/{name} (issue 31, decision 0132): the handlers of the application
// are those with settings, with Throttled, Pending or Running stages, or registered by an Active
// worker, by name, each with its counts and oldest wait; another application's key sees none of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, handlerListSchema, type HandlerList, type HandlerView } from '@po/contracts';
import { expectProblem } from '@po/testing';
import { startGateway, type Gateway } from '../../testing/harness.js';
import { seedPipeline, seedStage, seedWorker } from '../../testing/handler-rows.js';

let gw: Gateway;
const shape = compile(handlerListSchema, { normalise: false });

async function list(key: string): Promise<HandlerView[]> {
  const reply = await gw.call('GET', '/handlers', { key });
  expect(reply.status, reply.text).toBe(200);
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return (reply.body as HandlerList).items;
}

beforeAll(async () => {
  gw = await startGateway();
  const A = gw.appA.id;
  const p = await seedPipeline(gw, A);
  // "mail": 2 Throttled (the older created 120 s ago), 1 Pending dispatched 30 s ago, 1 Running.
  await seedStage(gw, A, p, 'mail', 'Throttled', { ageSeconds: 120 });
  await seedStage(gw, A, p, 'mail', 'Throttled', { ageSeconds: 10 });
  await seedStage(gw, A, p, 'mail', 'Pending', { ageSeconds: 600, dispatchedSecondsAgo: 30 });
  await seedStage(gw, A, p, 'mail', 'Running', { ageSeconds: 900, dispatchedSecondsAgo: 800 });
  // "billing": a Pending stage dispatched 300 s ago is its oldest wait; its finished stages count for nothing.
  await seedStage(gw, A, p, 'billing', 'Pending', { ageSeconds: 400, dispatchedSecondsAgo: 300 });
  await seedStage(gw, A, p, 'billing', 'Completed');
  // Only finished or not yet ready stages: not listed.
  await seedStage(gw, A, p, 'archive', 'Completed');
  await seedStage(gw, A, p, 'later', 'NotStarted');
  // Workers: an Active one registers "resize" (and "mail"); a Stopped one's handlers are not listed.
  await seedWorker(gw, A, ['resize', 'mail']);
  await seedWorker(gw, A, ['legacy'], 'Stopped');
  // Settings before any stage or worker names the handler.
  expect((await gw.call('PUT', '/handlers/zeta', { json: { paused: true } })).status).toBe(200);
  // Application B: a handler of the same name and others of its own.
  const B = gw.appB.id;
  const q = await seedPipeline(gw, B);
  await seedStage(gw, B, q, 'mail', 'Running');
  await seedStage(gw, B, q, 'b-only', 'Throttled');
  await seedWorker(gw, B, ['b-worker']);
  expect((await gw.call('PUT', '/handlers/b-settings', { json: { maxConcurrent: 2 }, key: gw.appB.key })).status).toBe(200);
});

afterAll(async () => {
  await gw?.close();
});

describe('GET /handlers', () => {
  it('lists the union of settings, live stages and Active workers, by name, with their counts', async () => {
    const items = await list(gw.appA.key);
    expect(items.map((h) => h.name)).toEqual(['billing', 'mail', 'resize', 'zeta']);
    const [billing, mail, resize, zeta] = items;
    expect(mail).toMatchObject({ configured: false, paused: false, maxConcurrent: null, maxPerSecond: null, backlog: 3, throttled: 2, pending: 1, running: 1, updatedAt: null });
    // The oldest wait: the Throttled stage created 120 s ago (the Pending one waits for 30 s; Running ones do not wait).
    expect(mail!.oldestWaitingSeconds).toBeGreaterThanOrEqual(120);
    expect(mail!.oldestWaitingSeconds).toBeLessThan(150);
    expect(billing).toMatchObject({ backlog: 1, throttled: 0, pending: 1, running: 0 });
    // A Pending stage waits since its dispatch, not since its creation.
    expect(billing!.oldestWaitingSeconds).toBeGreaterThanOrEqual(300);
    expect(billing!.oldestWaitingSeconds).toBeLessThan(330);
    expect(resize).toMatchObject({ configured: false, backlog: 0, running: 0, oldestWaitingSeconds: null });
    expect(zeta).toMatchObject({ configured: true, paused: true, backlog: 0, oldestWaitingSeconds: null });
    expect(zeta!.updatedAt).not.toBeNull();
  });

  it('another application sees only its own handlers, and its counts only', async () => {
    const items = await list(gw.appB.key);
    expect(items.map((h) => h.name)).toEqual(['b-only', 'b-settings', 'b-worker', 'mail']);
    expect(items.find((h) => h.name === 'mail')).toMatchObject({ backlog: 0, running: 1, throttled: 0 });
    for (const name of ['billing', 'resize', 'zeta'])
      expectProblem(await gw.call('GET', `/handlers/${name}`, { key: gw.appB.key }), 404, 'not_found');
    expectProblem(await gw.call('GET', '/handlers/b-settings', { key: gw.appA.key }), 404, 'not_found');
  });

  it('needs an API key', async () => {
    expect((await gw.call('GET', '/handlers', { key: null })).status).toBe(401);
  });
});

describe('GET /handlers/{name}', () => {
  it('answers the same view as the listing', async () => {
    const items = await list(gw.appA.key);
    for (const name of ['mail', 'resize', 'zeta']) {
      const reply = await gw.call('GET', `/handlers/${name}`);
      expect(reply.status, reply.text).toBe(200);
      const listed = items.find((h) => h.name === name)!;
      expect({ ...reply.body, oldestWaitingSeconds: null }).toEqual({ ...listed, oldestWaitingSeconds: null });
    }
  });

  it('404 when no settings, no live stage and no Active worker name the handler', async () => {
    for (const name of ['nothing', 'archive', 'later', 'legacy', 'Mail'])
      expectProblem(await gw.call('GET', `/handlers/${name}`), 404, 'not_found');
  });

  it('400 for a name over 300 characters', async () => {
    expectProblem(await gw.call('GET', `/handlers/${'h'.repeat(301)}`), 400, 'validation_failed', ['name']);
  });
});
