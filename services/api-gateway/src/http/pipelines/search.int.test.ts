// GET /pipelines (issue 12, decision 0089): every filter alone and combined, newest first, paged
// through signed cursors bound to the application and the filters, every limit, tenancy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelinePageSchema, type PipelineStatus, type PipelineSummary } from '@po/contracts';
import { expectProblem, expectValid } from '@po/testing';
import { runAdmin } from '../../admin/commands.js';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

const T0 = Date.parse('2030-06-01T00:00:00.000Z');
let now = T0;
let gw: Gateway;

interface Made {
  id: number;
  app: 'A' | 'B';
  name: string;
  status: PipelineStatus;
  keywords: [string, string][];
  handlers: string[];
  schedule: string | null;
  createdAt: number;
}
const made: Made[] = [];
const SECRET = 'context-value-never-listed';

const page = (reply: Reply): { items: PipelineSummary[]; nextCursor: string | null } => {
  expect(reply.status, reply.text).toBe(200);
  expectValid(pipelinePageSchema, reply.body);
  return reply.body;
};

async function create(
  app: 'A' | 'B',
  name: string,
  status: PipelineStatus,
  keywords: [string, string][] = [],
  handlers: string[] = ['extract'],
): Promise<Made> {
  now += 1_000;
  const reply = await gw.call('POST', '/pipelines', {
    key: null,
    json: {
      apiKey: app === 'A' ? gw.appA.key : gw.appB.key,
      name,
      stages: handlers.map((h, i) => ({ stageName: `s${i}`, stageHandlerName: h })),
      pipelineKeywords: keywords.map(([key, value]) => ({ key, value })),
      pipelineContextItems: [{ key: 'ctx', value: SECRET }],
    },
  });
  expect(reply.status, reply.text).toBe(200);
  const m: Made = { id: reply.body.id, app, name, status, keywords, handlers, schedule: null, createdAt: now };
  await setStatus(m.id, status);
  made.push(m);
  return m;
}

async function setStatus(id: number, status: PipelineStatus) {
  const terminal = ['Completed', 'Failed', 'Cancelled'].includes(status);
  await gw.db.$executeRaw`UPDATE pipelines SET status = ${status}::"PipelineStatus",
    finished_at = CASE WHEN ${terminal} THEN created_at + interval '5 seconds' END WHERE id = ${BigInt(id)}`;
}

/** A pipeline created by schedule `name` of the app (a manual trigger). */
async function scheduled(app: 'A' | 'B', schedule: string, status: PipelineStatus): Promise<Made> {
  const key = app === 'A' ? gw.appA.key : gw.appB.key;
  now += 1_000;
  const put = await gw.call('PUT', `/schedules/${schedule}`, {
    key,
    json: {
      kind: 'Interval',
      intervalSeconds: 3600,
      definition: { name: `${schedule}-run`, stages: [{ stageName: 's', stageHandlerName: 'report' }], pipelineKeywords: [{ key: 'team', value: 'ops' }] },
    },
  });
  expect([200, 201]).toContain(put.status);
  const reply = await gw.call('POST', `/schedules/${schedule}/trigger`, { key });
  expect(reply.status, reply.text).toBe(201);
  const m: Made = {
    id: reply.body.pipeline.id,
    app,
    name: `${schedule}-run`,
    status,
    keywords: [['team', 'ops']],
    handlers: ['report'],
    schedule: put.body.name,
    createdAt: now,
  };
  await setStatus(m.id, status);
  made.push(m);
  return m;
}

/** The application's pipelines that `keep` selects, newest first (the oracle). */
function expected(keep: (m: Made) => boolean, app: 'A' | 'B' = 'A'): number[] {
  return made
    .filter((m) => m.app === app && keep(m))
    .sort((a, b) => b.createdAt - a.createdAt || b.id - a.id)
    .map((m) => m.id);
}

/** Every page of a search, following nextCursor; the ids in order, and the pages. */
async function all(query: string, limit: number, key = gw.appA.key) {
  const ids: number[] = [];
  const pages: { items: PipelineSummary[]; nextCursor: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '';
    const p = page(await gw.call('GET', `/pipelines?${query}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { key }));
    pages.push(p);
    ids.push(...p.items.map((i) => i.id));
    cursor = p.nextCursor;
  } while (cursor !== null && pages.length < 100);
  return { ids, pages };
}

const has = (m: Made, key: string, value?: string) => m.keywords.some(([k, v]) => k === key && (value === undefined || v === value));

beforeAll(async () => {
  gw = await startGateway({ clock: () => new Date(now) });
  await create('A', 'Nightly-Import', 'Completed', [['env', 'prod'], ['region', 'eu']], ['extract', 'load']);
  await create('A', 'nightly-report', 'Failed', [['env', 'staging']]);
  await create('A', 'import_%x', 'Running', [['env', 'prod'], ['url', 'a=b']], ['load-special']);
  await create('A', 'Adhoc', 'Cancelled', [['priority', 'high'], ['env', 'prod']], ['extract', 'load']);
  await scheduled('A', 'Daily', 'NotStarted');
  await create('A', 'nightly-import', 'Pending', [['env', 'prod'], ['region', 'us']], ['load']);
  await create('A', 'importXYZ', 'Completed');
  await create('A', 'Nightly-Import', 'Failed', [['env', 'prod'], ['region', 'eu']], ['extract', 'load']);
  await scheduled('A', 'daily', 'Completed');
  await create('A', 'nightly_import', 'Paused', [['env', 'dev']]);
  await create('B', 'nightly-b', 'Completed', [['env', 'prod']], ['extract', 'load-special']);
  await scheduled('B', 'Daily', 'Completed');
  await create('A', 'ünïcode-Straße', 'Completed', [['lang', 'de']]);
});
afterAll(async () => {
  await gw?.close();
});

describe('GET /pipelines: filters (each page newest first, createdAt then id)', () => {
  const cases: [string, string, (m: Made) => boolean][] = [
    ['no filter', '', () => true],
    ['one status', 'status=Failed', (m) => m.status === 'Failed'],
    ['several statuses (any of them)', 'status=Completed&status=Pending&status=Completed', (m) => ['Completed', 'Pending'].includes(m.status)],
    ['name prefix, case-insensitive', 'name=NIGHTLY', (m) => m.name.toLowerCase().startsWith('nightly')],
    ['name prefix with _ and % matched literally', 'name=nightly_', (m) => m.name.toLowerCase().startsWith('nightly_')],
    ['name prefix %', `name=${encodeURIComponent('import_%')}`, (m) => m.name.toLowerCase().startsWith('import_%')],
    ['name prefix beyond ASCII', `name=${encodeURIComponent('ÜNÏ')}`, (m) => m.name.startsWith('ünï')],
    ['keyword KEY', 'keyword=region', (m) => has(m, 'region')],
    ['keyword KEY=VALUE', 'keyword=env%3Dprod', (m) => has(m, 'env', 'prod')],
    ['keyword split at the first =', `keyword=${encodeURIComponent('url=a=b')}`, (m) => has(m, 'url', 'a=b')],
    ['keywords: every one must match', 'keyword=env%3Dprod&keyword=region%3Deu', (m) => has(m, 'env', 'prod') && has(m, 'region', 'eu')],
    ['keyword values are exact', 'keyword=env%3DPROD', () => false],
    ['scheduleName, case-insensitive, this application only', 'scheduleName=DAILY', (m) => m.schedule?.toLowerCase() === 'daily'],
    ['an unknown schedule matches nothing', 'scheduleName=weekly', () => false],
    ['stageHandlerName, exact', 'stageHandlerName=load', (m) => m.handlers.includes('load')],
    ['stageHandlerName of a later stage', 'stageHandlerName=load-special', (m) => m.handlers.includes('load-special')],
    ['createdAfter is inclusive', `createdAfter=${new Date(T0 + 5_000).toISOString()}`, (m) => m.createdAt >= T0 + 5_000],
    ['createdBefore is exclusive', `createdBefore=${new Date(T0 + 5_000).toISOString()}`, (m) => m.createdAt < T0 + 5_000],
    [
      'a window, in another offset',
      `createdAfter=${encodeURIComponent('2030-06-01T02:00:03+02:00')}&createdBefore=${encodeURIComponent('2030-05-31T19:00:08-05:00')}`,
      (m) => m.createdAt >= T0 + 3_000 && m.createdAt < T0 + 8_000,
    ],
    [
      'status, name, keyword, handler and window together',
      `status=Completed&status=Failed&name=nightly&keyword=env%3Dprod&stageHandlerName=extract&createdAfter=${new Date(T0).toISOString()}`,
      (m) => ['Completed', 'Failed'].includes(m.status) && m.name.toLowerCase().startsWith('nightly') && has(m, 'env', 'prod') && m.handlers.includes('extract'),
    ],
    ['schedule and status together', 'scheduleName=daily&status=Completed', (m) => m.schedule?.toLowerCase() === 'daily' && m.status === 'Completed'],
    ['unknown parameters are ignored', 'foo=bar&Status=Failed', () => true],
  ];

  it.each(cases)('%s', async (what, query, keep) => {
    const want = expected(keep);
    // Every case selects some pipelines and leaves others out, except the two that match none.
    expect(want.length > 0, 'selects some').toBe(!/matches nothing|values are exact/.test(what));
    if (query && !/ignored/.test(what)) expect(want.length).toBeLessThan(expected(() => true).length);
    for (const limit of [1, 2, 200]) {
      const { ids, pages } = await all(query, limit);
      expect(ids).toEqual(want);
      // nextCursor is non-null exactly when more pipelines followed.
      expect(pages.map((p) => p.nextCursor !== null)).toEqual(pages.map((_, i) => i < pages.length - 1));
      if (want.length > 0) expect(pages.every((p) => p.items.length > 0)).toBe(true);
    }
  });

  it('items are summaries: stage counts, schedule name, trace id, never context values or keywords', async () => {
    const reply = await gw.call('GET', '/pipelines?limit=200');
    const { items } = page(reply);
    expect(reply.text).not.toContain(SECRET);
    expect(reply.text).not.toContain('pipelineKeywords');
    const first = made.find((m) => m.name === 'Nightly-Import')!;
    const item = items.find((i) => i.id === first.id)!;
    expect(item).toEqual({
      id: first.id,
      name: 'Nightly-Import',
      status: 'Completed',
      isTerminal: true,
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      createdAt: new Date(first.createdAt).toISOString(),
      finishedAt: new Date(first.createdAt + 5_000).toISOString(),
      scheduleName: null,
      rerunOf: null,
      stageCount: 2,
      stageStatusCounts: {
        NotStarted: 2,
        Running: 0,
        Pending: 0,
        RetryScheduled: 0,
        Throttled: 0,
        WaitingForApproval: 0,
        Completed: 0,
        Failed: 0,
        Skipped: 0,
        Cancelled: 0,
      },
    });
    const daily = items.find((i) => i.scheduleName !== null)!;
    expect(['Daily', 'daily']).toContain(daily.scheduleName);
    expect(daily).toMatchObject({ status: expect.any(String), isTerminal: expect.any(Boolean), finishedAt: daily.isTerminal ? expect.any(String) : null });
  });

  it('stage status counts follow the stages', async () => {
    const m = made.find((x) => x.name === 'Adhoc')!;
    await gw.db.$executeRaw`UPDATE stages SET status = 'Completed' WHERE pipeline_id = ${BigInt(m.id)} AND position = 0`;
    await gw.db.$executeRaw`UPDATE stages SET status = 'Cancelled' WHERE pipeline_id = ${BigInt(m.id)} AND position = 1`;
    const { items } = page(await gw.call('GET', '/pipelines?name=adhoc'));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ stageCount: 2, stageStatusCounts: { Completed: 1, Cancelled: 1, NotStarted: 0 } });
  });

  it('another application sees only its own pipelines, whatever the filter', async () => {
    expect((await all('', 2, gw.appB.key)).ids).toEqual(expected(() => true, 'B'));
    expect((await all('scheduleName=daily', 1, gw.appB.key)).ids).toEqual(expected((m) => m.schedule !== null, 'B'));
    expect((await all('keyword=env%3Dprod&stageHandlerName=load-special', 1, gw.appB.key)).ids).toEqual(
      expected((m) => has(m, 'env', 'prod') && m.handlers.includes('load-special'), 'B'),
    );
    expect((await all('name=nightly-b', 5)).ids).toEqual([]);
  });

  it('needs a valid X-API-Key (401)', async () => {
    expectProblem(await gw.call('GET', '/pipelines', { key: null }), 401, 'unauthorized');
    expectProblem(await gw.call('GET', '/pipelines', { key: 'pos_nope' }), 401, 'unauthorized');
  });
});

describe('GET /pipelines: paging', () => {
  it('pages through every pipeline once while pipelines are created between pages', async () => {
    const before = expected(() => true);
    const first = page(await gw.call('GET', '/pipelines?limit=3'));
    const seen = first.items.map((i) => i.id);
    let cursor = first.nextCursor;
    const added: number[] = [];
    while (cursor !== null) {
      // A new pipeline arrives between every two pages; it is newer than the cursor's position.
      added.push((await create('A', 'late-arrival', 'NotStarted')).id);
      const next = page(await gw.call('GET', `/pipelines?limit=3&cursor=${cursor}`));
      seen.push(...next.items.map((i) => i.id));
      cursor = next.nextCursor;
    }
    expect(seen).toEqual(before);
    expect(new Set(seen).size).toBe(seen.length);
    // The next listing from the start has them first.
    const again = page(await gw.call('GET', `/pipelines?limit=${added.length}`));
    expect(again.items.map((i) => i.id)).toEqual([...added].reverse());
  });

  it('a pipeline created at the same instant as the cursor position is ordered by id', async () => {
    now += 1_000;
    const frozen = now;
    const twins: number[] = [];
    for (let i = 0; i < 3; i++) {
      now = frozen;
      twins.push((await create('A', 'twin', 'Completed')).id);
      now = frozen;
    }
    const { ids } = await all('name=twin', 1);
    expect(ids).toEqual([...twins].reverse());
  });

  it('the limit may change between pages; the filters may be given in another order or spelling', async () => {
    const first = page(await gw.call('GET', '/pipelines?status=Failed&status=Completed&keyword=env%3Dprod&keyword=region&limit=1'));
    expect(first.nextCursor).not.toBeNull();
    const rest = page(
      await gw.call('GET', `/pipelines?keyword=region&keyword=env%3Dprod&status=Completed&status=Failed&status=Failed&limit=50&cursor=${first.nextCursor}`),
    );
    expect([...first.items, ...rest.items].map((i) => i.id)).toEqual(
      expected((m) => ['Completed', 'Failed'].includes(m.status) && has(m, 'env', 'prod') && has(m, 'region')),
    );
    const windowed = page(await gw.call('GET', `/pipelines?createdAfter=${encodeURIComponent('2030-06-01T02:00:00+02:00')}&limit=1`));
    expect(
      page(await gw.call('GET', `/pipelines?createdAfter=2030-06-01T00:00:00.000Z&limit=1&cursor=${windowed.nextCursor}`)).items,
    ).toHaveLength(1);
  });
});

describe('GET /pipelines: limits and validation (400 with every bad parameter named)', () => {
  let c: { key: string; ids: number[] };
  beforeAll(async () => {
    const app = (await runAdmin(gw.db, ['apps', 'create', '--name', 'C'])) as { applicationId: number; apiKey: string };
    const ids: number[] = [];
    for (let batch = 0; batch < 205; batch += 41) {
      now += 1_000;
      const replies = await Promise.all(
        Array.from({ length: 41 }, () =>
          gw.call('POST', '/pipelines', { key: null, json: { apiKey: app.apiKey, name: 'bulk', stages: [{ stageName: 's', stageHandlerName: 'h' }] } }),
        ),
      );
      ids.push(...replies.map((r) => r.body.id as number));
    }
    c = { key: app.apiKey, ids: ids.sort((a, b) => b - a) };
  });

  it('limit defaults to 50; 1 and 200 are the bounds', async () => {
    const byCreation = async (query: string) => page(await gw.call('GET', `/pipelines${query}`, { key: c.key }));
    const first = await byCreation('');
    expect(first.items).toHaveLength(50);
    expect(first.nextCursor).not.toBeNull();
    expect((await byCreation('?limit=1')).items).toHaveLength(1);
    const big = await byCreation('?limit=200');
    expect(big.items).toHaveLength(200);
    const rest = await byCreation(`?limit=200&cursor=${big.nextCursor}`);
    expect(rest).toMatchObject({ nextCursor: null });
    expect(rest.items).toHaveLength(5);
    // Same createdAt for a batch: ordered by id, newest first.
    expect([...big.items, ...rest.items].map((i) => i.id)).toEqual(c.ids);
  });

  it.each([
    ['limit=0', ['limit']],
    ['limit=201', ['limit']],
    ['limit=-1', ['limit']],
    ['limit=1.5', ['limit']],
    ['limit=abc', ['limit']],
    ['limit=', ['limit']],
    ['limit=1&limit=2', ['limit']],
    ['status=failed', ['status']],
    ['status=Failed&status=Archived', ['status']],
    ['status=', ['status']],
    ['name=', ['name']],
    [`name=${'x'.repeat(256)}`, ['name']],
    ['name=a&name=b', ['name']],
    ['keyword=', ['keyword']],
    ['keyword=%3Dprod', ['keyword']],
    ['keyword=env%3D', ['keyword']],
    [`keyword=${'k'.repeat(301)}`, ['keyword']],
    [Array.from({ length: 11 }, (_, i) => `keyword=k${i}`).join('&'), ['keyword']],
    ['scheduleName=', ['scheduleName']],
    [`scheduleName=${'s'.repeat(201)}`, ['scheduleName']],
    ['scheduleName=a%00b', ['scheduleName']],
    ['name=%00', ['name']],
    ['keyword=%00', ['keyword']],
    ['keyword=env%3D%00', ['keyword']],
    ['stageHandlerName=h%00', ['stageHandlerName']],
    ['stageHandlerName=', ['stageHandlerName']],
    [`stageHandlerName=${'h'.repeat(301)}`, ['stageHandlerName']],
    ['createdAfter=yesterday', ['createdAfter']],
    ['createdAfter=2030-06-01T00:00:00', ['createdAfter']],
    ['createdBefore=2030-02-30T00:00:00Z', ['createdBefore']],
    ['createdBefore=0000-01-01T00:00:00Z', ['createdBefore']],
    ['createdAfter=2030-06-01T00:00:00Z&createdBefore=2030-06-01T00:00:00Z', ['createdBefore']],
    ['createdAfter=2030-06-02T00:00:00Z&createdBefore=2030-06-01T00:00:00Z', ['createdBefore']],
    ['cursor=', ['cursor']],
    ['cursor=garbage', ['cursor']],
    ['status=Nope&limit=0&createdAfter=x&keyword=', ['status', 'limit', 'createdAfter', 'keyword']],
  ])('?%s is a 400 at %j', async (query, fields) => {
    expectProblem(await gw.call('GET', `/pipelines?${query}`), 400, 'validation_failed', fields);
  });

  it('the bounds themselves are accepted', async () => {
    for (const query of [
      `name=${'x'.repeat(255)}`,
      `keyword=${'k'.repeat(300)}%3D${'v'.repeat(300)}`,
      Array.from({ length: 10 }, (_, i) => `keyword=k${i}`).join('&'),
      `scheduleName=${'s'.repeat(200)}`,
      `stageHandlerName=${'h'.repeat(300)}`,
      'createdAfter=0001-01-01T00:00:00Z&createdBefore=9999-12-31T23:59:59.999Z',
      'status=NotStarted&status=Pending&status=Running&status=Paused&status=Completed&status=Failed&status=Cancelled',
    ]) {
      expect(page(await gw.call('GET', `/pipelines?${query}`)).items).toBeDefined();
    }
  });
});

describe('GET /pipelines: cursors are signed and bound to their listing (400 at cursor)', () => {
  async function cursorOf(query: string, key = gw.appA.key): Promise<string> {
    const p = page(await gw.call('GET', `/pipelines?${query}${query ? '&' : ''}limit=1`, { key }));
    expect(p.nextCursor).not.toBeNull();
    return p.nextCursor!;
  }
  const refused = async (query: string, key = gw.appA.key) =>
    expectProblem(await gw.call('GET', `/pipelines?${query}`, { key }), 400, 'validation_failed', ['cursor']);

  it('a cursor continues only the filters it was issued for', async () => {
    const failed = await cursorOf('status=Failed');
    expect((await gw.call('GET', `/pipelines?status=Failed&cursor=${failed}`)).status).toBe(200);
    await refused(`status=Completed&cursor=${failed}`);
    await refused(`status=Failed&status=Completed&cursor=${failed}`);
    await refused(`cursor=${failed}`);
    await refused(`status=Failed&name=n&cursor=${failed}`);
    const named = await cursorOf('name=nightly');
    await refused(`name=Nightly&cursor=${named}`);
    await refused(`name=nightl&cursor=${named}`);
    const keyword = await cursorOf('keyword=env%3Dprod');
    await refused(`keyword=env&cursor=${keyword}`);
    await refused(`keyword=env%3Dprod&keyword=region&cursor=${keyword}`);
    const window = await cursorOf('createdAfter=2030-06-01T00:00:01Z');
    await refused(`createdAfter=2030-06-01T00:00:02Z&cursor=${window}`);
    await refused(`createdBefore=2030-06-01T00:00:01Z&cursor=${window}`);
    const handler = await cursorOf('stageHandlerName=extract');
    await refused(`stageHandlerName=load&cursor=${handler}`);
    const schedule = await cursorOf('scheduleName=Daily');
    // Schedule names match case-insensitively, so the listing is the same.
    expect((await gw.call('GET', `/pipelines?scheduleName=DAILY&cursor=${schedule}`)).status).toBe(200);
    await refused(`scheduleName=Weekly&cursor=${schedule}`);
  });

  it("another application cannot use a cursor of A's listing", async () => {
    const cursor = await cursorOf('');
    await refused(`cursor=${cursor}`, gw.appB.key);
    const bCursor = await cursorOf('', gw.appB.key);
    await refused(`cursor=${bCursor}`);
  });

  it('a forged or modified cursor, or one of another listing, is refused', async () => {
    const cursor = await cursorOf('');
    const [payload, tag] = cursor.split('.') as [string, string];
    const position = JSON.parse(Buffer.from(payload, 'base64url').toString()) as [string, number, number];
    const moved = Buffer.from(JSON.stringify([position[0], position[1], position[2] + 1])).toString('base64url');
    await refused(`cursor=${moved}.${tag}`);
    await refused(`cursor=${payload}.${'A'.repeat(22)}`);
    await refused(`cursor=${payload}`);
    await refused(`cursor=${Buffer.from('v1.1.AAAAAAAAAAAAAAAAAAAAAA').toString('base64url')}`);
    await refused(`cursor=${'x'.repeat(600)}`);
    // A cursor of the schedules listing, of a stage's logs, and the other way round.
    await gw.call('PUT', '/schedules/second', {
      json: { kind: 'Interval', intervalSeconds: 60, definition: { name: 'x', stages: [{ stageName: 's', stageHandlerName: 'h' }] } },
    });
    const schedules = (await gw.call('GET', '/schedules?limit=1')).body.nextCursor as string;
    expect(schedules).toEqual(expect.any(String));
    await refused(`cursor=${schedules}`);
    expectProblem(await gw.call('GET', `/schedules?cursor=${cursor}`), 400, 'validation_failed', ['cursor']);
  });
});
