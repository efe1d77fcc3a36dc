// GET /schedules, GET /schedules/{name}, GET /schedules/{name}/runs: paging, filters, health and
// isolation between applications (api-spec "Schedules", "Errors"; addendum §3, §5.5–§5.7, §14.8, §14.9).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  problemDetailsSchema,
  scheduleRunPageSchema,
  schedulePageSchema,
  scheduleSchema,
  type FieldError,
} from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const shapes = {
  schedules: compile(schedulePageSchema, { normalise: false }),
  runs: compile(scheduleRunPageSchema, { normalise: false }),
  schedule: compile(scheduleSchema, { normalise: false }),
  problem: compile(problemDetailsSchema, { normalise: false }),
};
function expectShape(reply: Reply, shape: (typeof shapes)[keyof typeof shapes]) {
  expect(reply.status, reply.text).toBe(200);
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body;
}
function expectProblem(reply: Reply, status: number, code: string, fields?: string[]) {
  expect(reply.status, reply.text).toBe(status);
  const checked = shapes.problem(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body.code).toBe(code);
  if (fields)
    expect((reply.body.errors as FieldError[]).map((e) => e.field).sort()).toEqual(
      [...fields].sort(),
    );
}

const definition = { name: 'p', stages: [{ stageName: 's', stageHandlerName: 'h' }] };
const names: string[] = [];
async function put(name: string, key = gw.appA.key) {
  const reply = await gw.call('PUT', `/schedules/${name}`, {
    key,
    json: { kind: 'Interval', intervalSeconds: 60, definition },
  });
  expect(reply.status, reply.text).toBe(201);
  return reply.body as { id: number; name: string };
}
async function allPages(
  path: string,
  limit: number,
  key = gw.appA.key,
): Promise<{ pages: { items: { id: number }[]; nextCursor: string | null }[] }> {
  const pages = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const reply = await gw.call(
      'GET',
      `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { key },
    );
    const page = expectShape(reply, path.includes('/runs') ? shapes.runs : shapes.schedules);
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 50);
  return { pages };
}

beforeAll(async () => {
  for (let i = 1; i <= 5; i++) names.push((await put(`list-${i}`)).name);
  await gw.call('POST', '/schedules/list-2/pause');
  await gw.call('POST', '/schedules/list-4/archive');
  await put('other-app-only', gw.appB.key);
});

describe('GET /schedules', () => {
  it('lists every status by id ascending, each item a full Schedule with health', async () => {
    const page = expectShape(await gw.call('GET', '/schedules'), shapes.schedules);
    expect(page.items.map((s: { name: string }) => s.name)).toEqual(names);
    expect(page.nextCursor).toBeNull();
    expect(page.items.map((s: { status: string }) => s.status)).toEqual([
      'Active',
      'Paused',
      'Active',
      'Archived',
      'Active',
    ]);
    expect(page.items[0].health).toMatchObject({ windowSize: 20, total: 0, state: 'idle' });
  });

  it('filters by status', async () => {
    for (const [status, expected] of [
      ['Active', ['list-1', 'list-3', 'list-5']],
      ['Paused', ['list-2']],
      ['Archived', ['list-4']],
    ] as const) {
      const page = expectShape(
        await gw.call('GET', `/schedules?status=${status}`),
        shapes.schedules,
      );
      expect(page.items.map((s: { name: string }) => s.name)).toEqual(expected);
    }
  });

  it('pages with nextCursor, non-null exactly when more items exist', async () => {
    const { pages } = await allPages('/schedules', 2);
    expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
    expect(pages.map((p) => p.nextCursor === null)).toEqual([false, false, true]);
    expect(pages.flatMap((p) => p.items.map((s) => s.id))).toEqual(
      pages.flatMap((p) => p.items.map((s) => s.id)).sort((a, b) => a - b),
    );
    const exact = await allPages('/schedules?status=Active', 3);
    expect(exact.pages.map((p) => [p.items.length, p.nextCursor === null])).toEqual([[3, true]]);
    const split = await allPages('/schedules?status=Active', 1);
    expect(split.pages.map((p) => p.nextCursor === null)).toEqual([false, false, true]);
  });

  it('rejects a cursor not issued for the same listing (400 at cursor)', async () => {
    const first = expectShape(await gw.call('GET', '/schedules?limit=1'), shapes.schedules);
    const activeCursor = expectShape(
      await gw.call('GET', '/schedules?status=Active&limit=1'),
      shapes.schedules,
    ).nextCursor;
    expect((await gw.call('GET', `/schedules?limit=1&cursor=${first.nextCursor}`)).status).toBe(
      200,
    );
    expectProblem(
      await gw.call('GET', `/schedules?status=Active&cursor=${first.nextCursor}`),
      400,
      'validation_failed',
      ['cursor'],
    );
    expectProblem(
      await gw.call('GET', `/schedules?cursor=${activeCursor}`),
      400,
      'validation_failed',
      ['cursor'],
    );
    expectProblem(
      await gw.call('GET', `/schedules?cursor=${first.nextCursor}`, { key: gw.appB.key }),
      400,
      'validation_failed',
      ['cursor'],
    );
    expectProblem(await gw.call('GET', '/schedules?cursor=garbage'), 400, 'validation_failed', [
      'cursor',
    ]);
    expectProblem(await gw.call('GET', '/schedules?cursor='), 400, 'validation_failed', ['cursor']);
    const forged = Buffer.from('v1.1.AAAAAAAAAAAAAAAAAAAAAA').toString('base64url');
    expectProblem(await gw.call('GET', `/schedules?cursor=${forged}`), 400, 'validation_failed', [
      'cursor',
    ]);
  });

  it.each([
    ['limit=0', ['limit']],
    ['limit=201', ['limit']],
    ['limit=abc', ['limit']],
    ['limit=1.5', ['limit']],
    ['limit=1&limit=2', ['limit']],
    ['status=active', ['status']],
    ['status=Deleted&limit=0', ['status', 'limit']],
  ])('rejects %s (400 at the parameter)', async (query, fields) => {
    expectProblem(await gw.call('GET', `/schedules?${query}`), 400, 'validation_failed', fields);
  });

  it('accepts limit 1 and 200; 401 without a key', async () => {
    expect((await gw.call('GET', '/schedules?limit=200')).status).toBe(200);
    expect(
      expectShape(await gw.call('GET', '/schedules?limit=1'), shapes.schedules).items,
    ).toHaveLength(1);
    expectProblem(await gw.call('GET', '/schedules', { key: null }), 401, 'unauthorized');
  });
});

describe('GET /schedules/{name}', () => {
  it('reads one schedule by any case of its name; 404 when unknown; 400 for a bad name', async () => {
    expect(expectShape(await gw.call('GET', '/schedules/LIST-3'), shapes.schedule).name).toBe(
      'list-3',
    );
    expectProblem(await gw.call('GET', '/schedules/nope'), 404, 'not_found');
    expectProblem(await gw.call('GET', `/schedules/${'x'.repeat(201)}`), 400, 'validation_failed', [
      'name',
    ]);
    expectProblem(await gw.call('GET', '/schedules/tab%09name'), 400, 'validation_failed', [
      'name',
    ]);
    expectProblem(await gw.call('GET', '/schedules/list-3', { key: null }), 401, 'unauthorized');
  });

  it('shows last-run fields and the health summary of the newest 20 runs', async () => {
    const { name } = await put('health-1');
    const ids: number[] = [];
    for (let i = 0; i < 22; i++)
      ids.push((await gw.call('POST', `/schedules/${name}/trigger`)).body.pipeline.id);
    const setStatus = (id: number, status: 'Completed' | 'Failed' | 'Cancelled') =>
      gw.db.pipeline.update({ where: { id: BigInt(id) }, data: { status } });
    for (const id of ids.slice(0, 10)) await setStatus(id, 'Failed'); // outside the window but two
    for (const id of ids.slice(10, 16)) await setStatus(id, 'Completed');
    await setStatus(ids[16]!, 'Cancelled');
    await setStatus(ids[17]!, 'Failed');
    const s = expectShape(await gw.call('GET', `/schedules/${name}`), shapes.schedule);
    expect(s).toMatchObject({ lastRunStatus: 'NotStarted', lastPipelineId: ids[21] });
    // Window = runs 3..22: runs 3..10 failed (8) + run 18 failed = 9, completed 6, cancelled 1, running 4.
    expect(s.health).toMatchObject({
      windowSize: 20,
      total: 20,
      failed: 9,
      completed: 6,
      cancelled: 1,
      running: 4,
      skipped: 0,
      state: 'failing',
    });
    await setStatus(ids[21]!, 'Completed');
    const healthier = expectShape(await gw.call('GET', `/schedules/${name}`), shapes.schedule);
    expect(healthier).toMatchObject({
      lastRunStatus: 'Completed',
      health: { state: 'degraded', completed: 7 },
    });
  });
});

describe('GET /schedules/{name}/runs', () => {
  it('lists runs newest first, paged', async () => {
    const { name } = await put('runs-1');
    const created: number[] = [];
    for (let i = 0; i < 5; i++)
      created.push((await gw.call('POST', `/schedules/${name}/trigger`)).body.run.id);
    const { pages } = await allPages(`/schedules/${name}/runs`, 2);
    expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
    expect(pages.flatMap((p) => p.items.map((r) => r.id))).toEqual([...created].reverse());
    const page = expectShape(await gw.call('GET', `/schedules/RUNS-1/runs?limit=1`), shapes.runs);
    expectProblem(
      await gw.call('GET', `/schedules/list-1/runs?cursor=${page.nextCursor}`),
      400,
      'validation_failed',
      ['cursor'],
    );
    const schedulesCursor = expectShape(
      await gw.call('GET', '/schedules?limit=1'),
      shapes.schedules,
    ).nextCursor;
    expectProblem(
      await gw.call('GET', `/schedules/${name}/runs?cursor=${schedulesCursor}`),
      400,
      'validation_failed',
      ['cursor'],
    );
  });

  it('works for an Archived schedule; 404 unknown; 400 for limit and name', async () => {
    expect(expectShape(await gw.call('GET', '/schedules/list-4/runs'), shapes.runs)).toEqual({
      items: [],
      nextCursor: null,
    });
    expectProblem(await gw.call('GET', '/schedules/nope/runs'), 404, 'not_found');
    expectProblem(
      await gw.call('GET', '/schedules/list-1/runs?limit=0'),
      400,
      'validation_failed',
      ['limit'],
    );
    expectProblem(
      await gw.call('GET', `/schedules/${'n'.repeat(201)}/runs`),
      400,
      'validation_failed',
      ['name'],
    );
    expectProblem(
      await gw.call('GET', '/schedules/list-1/runs', { key: null }),
      401,
      'unauthorized',
    );
  });
});

describe('isolation between applications', () => {
  it('B sees none of A’s schedules: empty list, 404 on every named operation', async () => {
    const list = expectShape(
      await gw.call('GET', '/schedules', { key: gw.appB.key }),
      shapes.schedules,
    );
    expect(
      list.items.map((s: { name: string; applicationId: number }) => [s.name, s.applicationId]),
    ).toEqual([['other-app-only', gw.appB.id]]);
    for (const [method, path] of [
      ['GET', '/schedules/list-1'],
      ['GET', '/schedules/list-1/runs'],
      ['POST', '/schedules/list-1/pause'],
      ['POST', '/schedules/list-1/resume'],
      ['POST', '/schedules/list-1/archive'],
      ['POST', '/schedules/list-1/trigger'],
    ] as const) {
      expectProblem(await gw.call(method, path, { key: gw.appB.key }), 404, 'not_found');
    }
    expectProblem(await gw.call('GET', '/schedules/other-app-only'), 404, 'not_found');
    expect(expectShape(await gw.call('GET', '/schedules/list-1'), shapes.schedule).status).toBe(
      'Active',
    );
  });

  it('the same name in two applications is two schedules', async () => {
    const b = await put('list-1', gw.appB.key);
    const a = expectShape(await gw.call('GET', '/schedules/list-1'), shapes.schedule);
    expect(b.id).not.toBe(a.id);
    expect(
      expectShape(await gw.call('GET', '/schedules/list-1', { key: gw.appB.key }), shapes.schedule)
        .applicationId,
    ).toBe(gw.appB.id);
  });
});
