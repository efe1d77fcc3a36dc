// Bounded reads of stage logs (issue 10 item 5, decision 0084): GET /pipelines/{id} shows each
// stage's newest logs (STAGE_LOG_WINDOW) and says when older ones exist; every log is reachable
// through GET /pipelines/{pipelineId}/stages/{stageId}/logs, a page at a time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '@po/testing';
import { STAGE_LOG_PAGE_BYTES, STAGE_LOG_WINDOW } from '@po/db';
import { compile, pipelineResponseSchema, stageLogPageSchema, type JsonSchema } from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

function expectShape(reply: Reply, schema: JsonSchema) {
  expect(reply.status, reply.text).toBe(200);
  const checked = compile(schema, { normalise: false })(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  return reply.body as any;
}

async function createPipeline(key: string, stageNames: string[]): Promise<{ id: number; stageIds: number[] }> {
  const reply = await gw.call('POST', '/pipelines', {
    json: { apiKey: key, name: 'logs', stages: stageNames.map((stageName) => ({ stageName, stageHandlerName: 'h' })) },
    key: null,
  });
  expect(reply.status, reply.text).toBe(200);
  return { id: reply.body.id, stageIds: reply.body.stages.map((s: { id: number }) => s.id) };
}

/**
 * `count` logs, three to a `created` instant (ties are ordered by id), inserted oldest first; the
 * first one before 1970 (a worker's own time can be anything). `bytes` pads every message.
 */
async function seedLogs(pipelineId: number, stageId: number, count: number, bytes = 0) {
  await gw.db.$executeRaw`
    INSERT INTO stage_logs (stage_id, pipeline_id, message, log_level, created)
    SELECT ${BigInt(stageId)}, ${BigInt(pipelineId)}, 'log ' || g || repeat('x', ${bytes}::int), 'Information',
           CASE WHEN g = 1 THEN timestamptz '1969-12-31T23:59:59.000Z'
                ELSE timestamptz '2030-01-01T00:00:00Z' + (g / 3) * interval '1 second' END
    FROM generate_series(1, ${count}::int) AS g ORDER BY g`;
}

/** The stage's logs as stored, in the order of addendum §4. */
async function storedLogs(stageId: number) {
  const rows = await gw.db.stageLog.findMany({ where: { stageId: BigInt(stageId) }, orderBy: [{ created: 'asc' }, { id: 'asc' }] });
  return rows.map((l) => ({ id: Number(l.id), stageId, message: l.message, logLevel: l.logLevel, created: l.created.toISOString(), carriedOver: l.carriedOver }));
}

/** Every page of the listing, following nextCursor. */
async function allPages(pipelineId: number, stageId: number, limit: number, key = gw.appA.key) {
  const pages: { items: unknown[]; nextCursor: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
    const page = expectShape(await gw.call('GET', `/pipelines/${pipelineId}/stages/${stageId}/logs${query}`, { key }), stageLogPageSchema);
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 100);
  return pages;
}

describe('GET /pipelines/{pipelineId}: logs per stage are capped', () => {
  it(`shows the newest ${STAGE_LOG_WINDOW.count} logs of a stage that has more, flagged logsTruncated; the pages return every one`, async () => {
    const p = await createPipeline(gw.appA.key, ['busy', 'quiet']);
    const [busy, quiet] = p.stageIds as [number, number];
    await seedLogs(p.id, busy, 250);
    await seedLogs(p.id, quiet, 3);
    const stored = await storedLogs(busy);

    const read = expectShape(await gw.call('GET', `/pipelines/${p.id}`), pipelineResponseSchema);
    expect(read.stages[0].logs).toEqual(stored.slice(-STAGE_LOG_WINDOW.count));
    expect(read.stages[0].logsTruncated).toBe(true);
    expect(read.stages[1].logs).toEqual(await storedLogs(quiet));
    expect(read.stages[1].logsTruncated).toBe(false);

    const pages = await allPages(p.id, busy, 60);
    expect(pages.map((page) => page.items.length)).toEqual([60, 60, 60, 60, 10]);
    expect(pages.flatMap((page) => page.items)).toEqual(stored);
    expect(pages.at(-1)!.nextCursor).toBeNull();
    // The default page size is 50 (addendum §14.8).
    const first = expectShape(await gw.call('GET', `/pipelines/${p.id}/stages/${busy}/logs`), stageLogPageSchema);
    expect(first.items).toEqual(stored.slice(0, 50));
  });

  it(`shows only as many of the newest logs as fit in ${STAGE_LOG_WINDOW.bytes} bytes of messages, the newest one always`, async () => {
    const p = await createPipeline(gw.appA.key, ['big', 'huge']);
    const [big, huge] = p.stageIds as [number, number];
    await seedLogs(p.id, big, 5, 100 * 1024);
    await seedLogs(p.id, huge, 1, 300 * 1024);
    const read = expectShape(await gw.call('GET', `/pipelines/${p.id}`), pipelineResponseSchema);
    expect(read.stages[0].logs).toEqual((await storedLogs(big)).slice(-2));
    expect(read.stages[0].logsTruncated).toBe(true);
    expect(read.stages[1].logs).toEqual(await storedLogs(huge));
    expect(read.stages[1].logsTruncated).toBe(false);
  });

  it('a stage without logs shows none and is not truncated', async () => {
    const p = await createPipeline(gw.appA.key, ['silent']);
    const read = expectShape(await gw.call('GET', `/pipelines/${p.id}`), pipelineResponseSchema);
    expect(read.stages[0]).toMatchObject({ logs: [], logsTruncated: false });
    const page = expectShape(await gw.call('GET', `/pipelines/${p.id}/stages/${p.stageIds[0]}/logs`), stageLogPageSchema);
    expect(page).toEqual({ items: [], nextCursor: null });
  });
});

describe('GET /pipelines/{pipelineId}/stages/{stageId}/logs', () => {
  it(`ends a page early once its messages reach ${STAGE_LOG_PAGE_BYTES} bytes, and still returns every log`, async () => {
    const p = await createPipeline(gw.appA.key, ['big']);
    const stageId = p.stageIds[0]!;
    await seedLogs(p.id, stageId, 12, 100 * 1024);
    const pages = await allPages(p.id, stageId, 200);
    expect(pages.map((page) => page.items.length)).toEqual([10, 2]);
    expect(pages.flatMap((page) => page.items)).toEqual(await storedLogs(stageId));
  });

  it("another application's key gets 404, as does a stage of another pipeline or an unknown one", async () => {
    const p = await createPipeline(gw.appA.key, ['a']);
    const other = await createPipeline(gw.appA.key, ['b']);
    await seedLogs(p.id, p.stageIds[0]!, 3);
    const path = `/pipelines/${p.id}/stages/${p.stageIds[0]}/logs`;
    expect(expectShape(await gw.call('GET', path), stageLogPageSchema).items).toHaveLength(3);
    expectProblem(await gw.call('GET', path, { key: gw.appB.key }), 404, 'not_found');
    expectProblem(await gw.call('GET', `/pipelines/${other.id}/stages/${p.stageIds[0]}/logs`), 404, 'not_found');
    expectProblem(await gw.call('GET', `/pipelines/${p.id}/stages/999999999/logs`), 404, 'not_found');
    expectProblem(await gw.call('GET', path, { key: null }), 401, 'unauthorized');
  });

  it('a cursor of another listing, a forged one or a bad limit is a 400 at its parameter', async () => {
    const p = await createPipeline(gw.appA.key, ['a', 'b']);
    const [a, b] = p.stageIds as [number, number];
    await seedLogs(p.id, a, 5);
    await seedLogs(p.id, b, 5);
    const fromA = (await gw.call('GET', `/pipelines/${p.id}/stages/${a}/logs?limit=2`)).body.nextCursor as string;
    expect(fromA).toEqual(expect.any(String));
    const cases: [string, string][] = [
      [`/pipelines/${p.id}/stages/${b}/logs?cursor=${fromA}`, 'cursor'],
      [`/pipelines/${p.id}/stages/${a}/logs?cursor=${Buffer.from('l1.0.1.aaaaaaaaaaaaaaaaaaaaaa').toString('base64url')}`, 'cursor'],
      // Before any year a log can have: refused as a cursor, never sent to the database.
      [`/pipelines/${p.id}/stages/${a}/logs?cursor=${Buffer.from('l1.-99999999999999.1.aaaaaaaaaaaaaaaaaaaaaa').toString('base64url')}`, 'cursor'],
      [`/pipelines/${p.id}/stages/${a}/logs?cursor=%21`, 'cursor'],
      [`/pipelines/${p.id}/stages/${a}/logs?limit=0`, 'limit'],
      [`/pipelines/${p.id}/stages/${a}/logs?limit=201`, 'limit'],
      [`/pipelines/${p.id}/stages/abc/logs`, 'stageId'],
    ];
    for (const [path, field] of cases) expectProblem(await gw.call('GET', path), 400, 'validation_failed', [field]);
    // Another application presenting A's cursor on A's stage: not its listing, and not its stage.
    expectProblem(await gw.call('GET', `/pipelines/${p.id}/stages/${a}/logs?cursor=${fromA}`, { key: gw.appB.key }), 404, 'not_found');
  });
});
