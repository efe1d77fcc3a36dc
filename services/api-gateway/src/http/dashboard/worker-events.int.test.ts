// GET /worker-events (issue 13, decision 0093): the events of every worker of the application,
// newest recorded first, with the worker each came from; signed cursor pages; one application
// never sees another's workers or events, nor pages with its cursors.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, fleetWorkerEventPageSchema, type FleetWorkerEvent, type FleetWorkerEventPage } from '@po/contracts';
import { insertWorkerEvents, sqlOf } from '@po/db';
import { expectProblem } from '@po/testing';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
const shape = compile(fleetWorkerEventPageSchema, { normalise: false });
const T0 = Date.parse('2026-03-01T12:00:00.000Z');

async function worker(applicationId: number, name: string | null): Promise<string> {
  const id = randomUUID();
  await gw.db.worker.create({ data: { id, applicationId, instanceId: `instance-${id}`, workerName: name, handlers: ['resize'] } });
  return id;
}

async function event(applicationId: number, workerId: string, message: string, extra: { pipelineId?: number; data?: Record<string, unknown> } = {}) {
  await insertWorkerEvents(sqlOf(gw.db), { workerId, applicationId }, [
    { kind: 'custom', at: new Date(T0), message, stageId: null, pipelineId: extra.pipelineId ?? null, data: extra.data ?? null },
  ]);
}

async function page(query: string, key = gw.appA.key): Promise<FleetWorkerEventPage> {
  const reply = await gw.call('GET', `/worker-events${query}`, { key });
  expect(reply.status, reply.text).toBe(200);
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as FleetWorkerEventPage;
}

async function all(limit: number, key = gw.appA.key): Promise<FleetWorkerEvent[]> {
  const items: FleetWorkerEvent[] = [];
  let cursor: string | null = null;
  do {
    const p: FleetWorkerEventPage = await page(`?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key);
    items.push(...p.items);
    cursor = p.nextCursor;
  } while (cursor !== null && items.length < 100);
  return items;
}

let first: string;
let second: string;
let other: string;

beforeAll(async () => {
  gw = await startGateway();
  first = await worker(gw.appA.id, 'first');
  second = await worker(gw.appA.id, null);
  other = await worker(gw.appB.id, 'other');
  // Recorded in this order, interleaved across the workers and applications.
  await event(gw.appA.id, first, 'a1');
  await event(gw.appB.id, other, 'b1');
  await event(gw.appA.id, second, 'a2', { pipelineId: 42, data: { attempt: 2 } });
  await event(gw.appA.id, first, 'a3');
  await event(gw.appB.id, other, 'b2');
  await event(gw.appA.id, second, 'a4');
  await event(gw.appA.id, first, 'a5');
});
afterAll(async () => {
  await gw?.close();
});

describe('GET /worker-events', () => {
  it("lists every worker's events of the application, newest recorded first, with the worker", async () => {
    const p = await page('');
    expect(p.nextCursor).toBeNull();
    expect(p.items.map((e) => e.message)).toEqual(['a5', 'a4', 'a3', 'a2', 'a1']);
    expect(p.items.map((e) => e.workerId)).toEqual([first, second, first, second, first]);
    expect(p.items[0]).toMatchObject({ workerName: 'first', kind: 'custom', at: new Date(T0).toISOString(), stageId: null, pipelineId: null, data: null });
    expect(p.items[3]).toMatchObject({ workerName: null, pipelineId: 42, data: { attempt: 2 } });
    const ids = p.items.map((e) => e.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
  });

  it('pages with signed cursors: every event once, in order', async () => {
    const paged = await all(2);
    expect(paged.map((e) => e.message)).toEqual(['a5', 'a4', 'a3', 'a2', 'a1']);
    const p = await page('?limit=2');
    expect(p.items).toHaveLength(2);
    expect(p.nextCursor).toEqual(expect.any(String));
  });

  it("shows another application's key only its own fleet", async () => {
    expect((await all(1, gw.appB.key)).map((e) => [e.message, e.workerId])).toEqual([['b2', other], ['b1', other]]);
  });

  it("refuses a cursor of another application's feed, of another listing, or tampered with", async () => {
    const ofB = (await page('?limit=1', gw.appB.key)).nextCursor!;
    expectProblem(await gw.call('GET', `/worker-events?cursor=${encodeURIComponent(ofB)}`), 400, 'validation_failed', ['cursor']);
    const ofWorker = (await gw.call('GET', `/workers/${first}/events?limit=1`)).body.nextCursor as string;
    expectProblem(await gw.call('GET', `/worker-events?cursor=${encodeURIComponent(ofWorker)}`), 400, 'validation_failed', ['cursor']);
    const mine = (await page('?limit=1')).nextCursor!;
    const tampered = `${mine.slice(0, -2)}${mine.endsWith('AA') ? 'AB' : 'AA'}`;
    expectProblem(await gw.call('GET', `/worker-events?cursor=${encodeURIComponent(tampered)}`), 400, 'validation_failed', ['cursor']);
  });

  it('checks limit and credentials', async () => {
    expectProblem(await gw.call('GET', '/worker-events?limit=0'), 400, 'validation_failed', ['limit']);
    expectProblem(await gw.call('GET', '/worker-events', { key: null }), 401, 'unauthorized');
  });

  it('answers 304 until a new event arrives', async () => {
    const firstRead = await gw.call('GET', '/worker-events?limit=3');
    const etag = firstRead.headers.get('etag')!;
    expect((await gw.call('GET', '/worker-events?limit=3', { headers: { 'if-none-match': etag } })).status).toBe(304);
    await event(gw.appA.id, second, 'a6');
    const changed = await gw.call('GET', '/worker-events?limit=3', { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.body.items[0].message).toBe('a6');
  });
});
