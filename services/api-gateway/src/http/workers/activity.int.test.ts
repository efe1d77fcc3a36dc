// GET /workers and GET /workers/{workerId}/events: fields, paging, newest first, isolation between
// applications, parameter errors and credentials (issue item 5; decision 0040; addendum §3, §14.8).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  workerEventPageSchema,
  workerPageSchema,
  type WorkerEventRecord,
  type WorkerSummary,
} from '@po/contracts';
import { bootstrapWorker, insertWorkerEvents, recordHeartbeat, recordShutdown, sqlOf } from '@po/db';
import { expectProblem } from '@po/testing';
import { runAdmin } from '../../admin/commands.js';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const shapes = {
  workers: compile(workerPageSchema, { normalise: false }),
  events: compile(workerEventPageSchema, { normalise: false }),
};

function expectPage(reply: Reply, shape: typeof shapes.workers | typeof shapes.events) {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as { items: unknown[]; nextCursor: string | null };
}

const T0 = Date.parse('2025-03-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

async function seedWorker(
  applicationId: number,
  options: { createdAt: number; id?: string; name?: string | null },
) {
  const id = options.id ?? randomUUID();
  await gw.db.worker.create({
    data: {
      id,
      applicationId,
      instanceId: `instance-${id}`,
      workerName: options.name === undefined ? `worker-${id.slice(0, 8)}` : options.name,
      handlers: ['resize', 'upload'],
      createdAt: new Date(options.createdAt),
    },
  });
  return id;
}

async function allPages(path: string, limit: number, key = gw.appA.key) {
  const pages: { items: { workerId?: string; id?: number }[]; nextCursor: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const reply = await gw.call(
      'GET',
      `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { key },
    );
    const page = expectPage(
      reply,
      path.includes('/events') ? shapes.events : shapes.workers,
    ) as (typeof pages)[number];
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 50);
  return pages;
}

describe('GET /workers', () => {
  let other: { applicationId: number; apiKey: string };
  const aWorkers: string[] = [];
  let bWorker: string;

  beforeAll(async () => {
    other = (await runAdmin(gw.db, [
      'apps',
      'create',
      '--name',
      'workers-list-empty',
    ])) as typeof other;
    // Five workers of A, two of them created at the same millisecond (ordered by id then).
    const tie = T0 + 2_000;
    const ids = [
      await seedWorker(gw.appA.id, { createdAt: T0 }),
      await seedWorker(gw.appA.id, { createdAt: T0 + 1_000 }),
    ];
    const tied = [randomUUID(), randomUUID()].sort();
    for (const id of [...tied].reverse()) await seedWorker(gw.appA.id, { createdAt: tie, id });
    ids.push(...tied, await seedWorker(gw.appA.id, { createdAt: T0 + 3_000, name: null }));
    aWorkers.push(...ids);
    bWorker = await seedWorker(gw.appB.id, { createdAt: T0 });
  });

  it('lists the workers of the application by createdAt, then workerId, with every field', async () => {
    const page = expectPage(await gw.call('GET', '/workers'), shapes.workers);
    expect(page.nextCursor).toBeNull();
    const items = page.items as WorkerSummary[];
    expect(items.map((w) => w.workerId)).toEqual(aWorkers);
    expect(items[0]).toEqual({
      workerId: aWorkers[0],
      instanceId: `instance-${aWorkers[0]}`,
      workerName: `worker-${aWorkers[0]!.slice(0, 8)}`,
      handlers: ['resize', 'upload'],
      status: 'Active',
      lastHeartbeatAt: null,
      counters: { inFlight: null, processed: null, failed: null },
      sessionExpiresAt: null,
      createdAt: iso(T0),
    });
    expect(items[4]?.workerName).toBeNull();
  });

  it('pages with nextCursor, which is null exactly when no more workers follow', async () => {
    for (const limit of [1, 2, 3, 5]) {
      const pages = await allPages('/workers', limit);
      expect(pages.flatMap((p) => p.items.map((w) => w.workerId))).toEqual(aWorkers);
      expect(pages).toHaveLength(Math.ceil(aWorkers.length / limit));
      expect(
        pages.slice(0, -1).every((p) => p.items.length === limit && p.nextCursor !== null),
      ).toBe(true);
      expect(pages.at(-1)?.nextCursor).toBeNull();
    }
    // The largest page size is accepted.
    expect(
      expectPage(await gw.call('GET', '/workers?limit=200'), shapes.workers).items,
    ).toHaveLength(aWorkers.length);
  });

  it('is application-scoped: B sees only its worker, a new application none', async () => {
    const b = expectPage(await gw.call('GET', '/workers', { key: gw.appB.key }), shapes.workers);
    expect((b.items as WorkerSummary[]).map((w) => w.workerId)).toEqual([bWorker]);
    const none = expectPage(
      await gw.call('GET', '/workers', { key: other.apiKey }),
      shapes.workers,
    );
    expect(none).toEqual({ items: [], nextCursor: null });
  });

  it("a cursor of A's listing is a 400 for B", async () => {
    const first = expectPage(await gw.call('GET', '/workers?limit=1'), shapes.workers);
    expect(first.nextCursor).not.toBeNull();
    const reply = await gw.call('GET', `/workers?cursor=${encodeURIComponent(first.nextCursor!)}`, {
      key: gw.appB.key,
    });
    expectProblem(reply, 400, 'validation_failed', ['cursor']);
  });

  it.each([
    ['limit=0', ['limit']],
    ['limit=201', ['limit']],
    ['limit=abc', ['limit']],
    ['limit=1.5', ['limit']],
    ['limit=1&limit=2', ['limit']],
    ['cursor=', ['cursor']],
    ['cursor=not-a-cursor', ['cursor']],
    ['cursor=%2B%2B', ['cursor']],
    ['limit=0&cursor=', ['limit', 'cursor']],
  ])('?%s is a 400 naming the parameter', async (query, fields) => {
    expectProblem(await gw.call('GET', `/workers?${query}`), 400, 'validation_failed', fields);
  });

  it('a cursor of the events listing is not a workers cursor', async () => {
    const workerId = aWorkers[0]!;
    await insertWorkerEvents(sqlOf(gw.db), { workerId, applicationId: gw.appA.id }, [
      {
        kind: 'custom',
        at: new Date(T0),
        message: null,
        stageId: null,
        pipelineId: null,
        data: null,
      },
      {
        kind: 'custom',
        at: new Date(T0),
        message: null,
        stageId: null,
        pipelineId: null,
        data: null,
      },
    ]);
    const events = expectPage(
      await gw.call('GET', `/workers/${workerId}/events?limit=1`),
      shapes.events,
    );
    expectProblem(
      await gw.call('GET', `/workers?cursor=${events.nextCursor!}`),
      400,
      'validation_failed',
      ['cursor'],
    );
  });

  it('401 without a key or with an invalid one, before parameters are checked', async () => {
    expectProblem(await gw.call('GET', '/workers', { key: null }), 401, 'unauthorized');
    expectProblem(
      await gw.call('GET', '/workers?limit=0', { key: 'pos_wrong' }),
      401,
      'unauthorized',
    );
  });
});

describe('worker records written by the worker protocol', () => {
  it('bootstrap, heartbeat, shutdown and re-bootstrap show up in the summary and the events', async () => {
    const { id: applicationId, key } = await newApplication('protocol');
    const now = new Date(T0 + 60_000);
    const expiresAt = new Date(now.getTime() + 86_400_000);
    const { workerId } = await gw.db.$transaction((tx) =>
      bootstrapWorker(tx, {
        applicationId,
        instanceId: 'host-1',
        workerName: 'thumbnailer',
        handlers: ['thumbs'],
        sdkVersion: '1.0.0',
        hostname: 'host-1.local',
        metadata: null,
        apiKeyId: null,
        tokenHash: randomUUID().replace(/-/g, '').padEnd(64, '0'),
        now,
        expiresAt,
      }),
    );
    await recordHeartbeat(gw.db, workerId, {
      now: new Date(now.getTime() + 5_000),
      inFlight: 2,
      processed: 10,
      failed: 1,
    });
    await insertWorkerEvents(sqlOf(gw.db), { workerId, applicationId }, [
      {
        kind: 'stage_started',
        at: new Date(now.getTime() + 6_000),
        message: 'go',
        stageId: 12,
        pipelineId: 3,
        data: { attempt: 1 },
      },
      {
        kind: 'stage_completed',
        at: new Date(now.getTime() + 7_000),
        message: null,
        stageId: 12,
        pipelineId: 3,
        data: null,
      },
    ]);
    await gw.db.$transaction((tx) =>
      recordShutdown(tx, { workerId, applicationId }, 'deploy', new Date(now.getTime() + 8_000)),
    );

    const list = expectPage(await gw.call('GET', '/workers', { key }), shapes.workers);
    expect(list.items).toEqual([
      {
        workerId,
        instanceId: 'host-1',
        workerName: 'thumbnailer',
        handlers: ['thumbs'],
        status: 'Stopped',
        lastHeartbeatAt: iso(now.getTime() + 5_000),
        counters: { inFlight: 2, processed: 10, failed: 1 },
        sessionExpiresAt: expiresAt.toISOString(),
        createdAt: (list.items[0] as WorkerSummary).createdAt,
      },
    ]);

    const events = expectPage(
      await gw.call('GET', `/workers/${workerId}/events`, { key }),
      shapes.events,
    );
    const items = events.items as WorkerEventRecord[];
    expect(items.map((e) => e.kind)).toEqual([
      'stopped',
      'stage_completed',
      'stage_started',
      'started',
    ]);
    expect(items[0]).toMatchObject({
      kind: 'stopped',
      message: 'deploy',
      at: iso(now.getTime() + 8_000),
    });
    expect(items[2]).toEqual({
      id: items[2]!.id,
      kind: 'stage_started',
      at: iso(now.getTime() + 6_000),
      message: 'go',
      stageId: 12,
      pipelineId: 3,
      data: { attempt: 1 },
    });
    expect(items[1]).toMatchObject({ message: null, data: null });

    // A re-bootstrap supersedes the session: the summary shows the new session's expiry.
    const later = new Date(now.getTime() + 3_600_000);
    await gw.db.$transaction((tx) =>
      bootstrapWorker(tx, {
        applicationId,
        instanceId: 'host-1',
        workerName: 'thumbnailer',
        handlers: ['thumbs'],
        sdkVersion: null,
        hostname: null,
        metadata: null,
        apiKeyId: null,
        tokenHash: randomUUID().replace(/-/g, '').padEnd(64, '1'),
        now: later,
        expiresAt: new Date(later.getTime() + 60_000),
      }),
    );
    const again = expectPage(await gw.call('GET', '/workers', { key }), shapes.workers);
    expect(again.items).toMatchObject([
      { workerId, status: 'Active', sessionExpiresAt: iso(later.getTime() + 60_000) },
    ]);
  });

  it('an expired current session is still reported (past sessionExpiresAt)', async () => {
    const { id: applicationId, key } = await newApplication('expired');
    const workerId = await seedWorker(applicationId, { createdAt: T0 });
    await gw.db.workerSession.create({
      data: {
        tokenHash: 'a'.repeat(64),
        workerId,
        applicationId,
        createdAt: new Date(T0),
        expiresAt: new Date(T0 + 1_000),
        supersededAt: new Date(T0 + 500),
      },
    });
    await gw.db.workerSession.create({
      data: {
        tokenHash: 'b'.repeat(64),
        workerId,
        applicationId,
        createdAt: new Date(T0 + 500),
        expiresAt: new Date(T0 + 2_000),
      },
    });
    const page = expectPage(await gw.call('GET', '/workers', { key }), shapes.workers);
    expect((page.items as WorkerSummary[])[0]?.sessionExpiresAt).toBe(iso(T0 + 2_000));
  });
});

describe('GET /workers/{workerId}/events', () => {
  let workerId: string;
  let otherWorker: string;
  let bWorker: string;
  const total = 7;

  beforeAll(async () => {
    workerId = await seedWorker(gw.appA.id, { createdAt: T0 + 10_000 });
    otherWorker = await seedWorker(gw.appA.id, { createdAt: T0 + 11_000 });
    bWorker = await seedWorker(gw.appB.id, { createdAt: T0 + 12_000 });
    // `at` goes backwards while ids go forwards: newest first means newest recorded (id).
    await insertWorkerEvents(
      sqlOf(gw.db),
      { workerId, applicationId: gw.appA.id },
      Array.from({ length: total }, (_, i) => ({
        kind: 'custom',
        at: new Date(T0 + 100_000 - i * 1_000),
        message: `event ${i}`,
        stageId: null,
        pipelineId: null,
        data: { i },
      })),
    );
    await gw.db.workerEvent.create({
      data: {
        workerId: otherWorker,
        applicationId: gw.appA.id,
        kind: 'error',
        at: new Date(T0),
        message: 'other',
      },
    });
    await gw.db.workerEvent.create({
      data: {
        workerId: bWorker,
        applicationId: gw.appB.id,
        kind: 'error',
        at: new Date(T0),
        message: 'b',
      },
    });
  });

  it('lists the events of that worker only, newest first, with every field', async () => {
    const page = expectPage(await gw.call('GET', `/workers/${workerId}/events`), shapes.events);
    const items = page.items as WorkerEventRecord[];
    expect(page.nextCursor).toBeNull();
    expect(items.map((e) => e.message)).toEqual(
      Array.from({ length: total }, (_, i) => `event ${total - 1 - i}`),
    );
    const ids = items.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(items[0]).toEqual({
      id: ids[0],
      kind: 'custom',
      at: iso(T0 + 100_000 - (total - 1) * 1_000),
      message: `event ${total - 1}`,
      stageId: null,
      pipelineId: null,
      data: { i: total - 1 },
    });
  });

  it('pages newest first with nextCursor', async () => {
    for (const limit of [1, 3, 7]) {
      const pages = await allPages(`/workers/${workerId}/events`, limit);
      const ids = pages.flatMap((p) => p.items.map((e) => e.id!));
      expect(ids).toHaveLength(total);
      expect(ids).toEqual([...ids].sort((a, b) => b - a));
      expect(pages).toHaveLength(Math.ceil(total / limit));
      expect(pages.at(-1)?.nextCursor).toBeNull();
    }
  });

  it('events recorded after a page was read come before it, not in the next page', async () => {
    const first = expectPage(
      await gw.call('GET', `/workers/${otherWorker}/events?limit=1`),
      shapes.events,
    );
    expect(first.nextCursor).toBeNull();
    await gw.db.workerEvent.create({
      data: {
        workerId: otherWorker,
        applicationId: gw.appA.id,
        kind: 'custom',
        at: new Date(T0),
        message: 'newer',
      },
    });
    const again = expectPage(
      await gw.call('GET', `/workers/${otherWorker}/events?limit=1`),
      shapes.events,
    );
    expect((again.items as WorkerEventRecord[]).map((e) => e.message)).toEqual(['newer']);
    const rest = expectPage(
      await gw.call('GET', `/workers/${otherWorker}/events?cursor=${again.nextCursor!}`),
      shapes.events,
    );
    expect((rest.items as WorkerEventRecord[]).map((e) => e.message)).toEqual(['other']);
  });

  it("another application's worker is a 404, like an unknown one", async () => {
    expectProblem(
      await gw.call('GET', `/workers/${workerId}/events`, { key: gw.appB.key }),
      404,
      'not_found',
    );
    expectProblem(await gw.call('GET', `/workers/${bWorker}/events`), 404, 'not_found');
    expectProblem(await gw.call('GET', `/workers/${randomUUID()}/events`), 404, 'not_found');
    const b = expectPage(
      await gw.call('GET', `/workers/${bWorker}/events`, { key: gw.appB.key }),
      shapes.events,
    );
    expect((b.items as WorkerEventRecord[]).map((e) => e.message)).toEqual(['b']);
  });

  it("a cursor of another worker's events is a 400", async () => {
    const page = expectPage(
      await gw.call('GET', `/workers/${workerId}/events?limit=1`),
      shapes.events,
    );
    const reply = await gw.call('GET', `/workers/${otherWorker}/events?cursor=${page.nextCursor!}`);
    expectProblem(reply, 400, 'validation_failed', ['cursor']);
  });

  it.each([
    ['limit=0', ['limit']],
    ['limit=201', ['limit']],
    ['limit=-1', ['limit']],
    ['cursor=', ['cursor']],
    ['cursor=bm90LWEtY3Vyc29y', ['cursor']],
  ])('?%s is a 400 naming the parameter', async (query, fields) => {
    expectProblem(
      await gw.call('GET', `/workers/${workerId}/events?${query}`),
      400,
      'validation_failed',
      fields,
    );
  });

  it('a malformed cursor is a 400 even for an unknown worker (parameters before existence)', async () => {
    expectProblem(
      await gw.call('GET', `/workers/${randomUUID()}/events?cursor=zzz`),
      400,
      'validation_failed',
      ['cursor'],
    );
  });

  it('an invalid workerId is a 400 at workerId', async () => {
    expectProblem(
      await gw.call('GET', `/workers/${'x'.repeat(65)}/events`),
      400,
      'validation_failed',
      ['workerId'],
    );
    expectProblem(await gw.call('GET', '/workers/a%00b/events'), 400, 'validation_failed', [
      'workerId',
    ]);
    expectProblem(await gw.call('GET', '/workers/a%0Ab/events'), 400, 'validation_failed', [
      'workerId',
    ]);
  });

  it('401 without a key or with an invalid one', async () => {
    expectProblem(
      await gw.call('GET', `/workers/${workerId}/events`, { key: null }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('GET', `/workers/${workerId}/events`, { key: 'pos_wrong' }),
      401,
      'unauthorized',
    );
  });
});

async function newApplication(name: string): Promise<{ id: number; key: string }> {
  const created = (await runAdmin(gw.db, ['apps', 'create', '--name', `workers-${name}`])) as {
    applicationId: number;
    apiKey: string;
  };
  return { id: created.applicationId, key: created.apiKey };
}
