// GET /pipelines reads through indexes (issue 12, decision 0089): over 40,000 pipelines of two
// applications with statistics gathered (ANALYZE), no common filter's plan reads pipelines,
// pipeline_keywords or stages sequentially, and every page equals what a plain scan would select.
// docs/search.md has the same plans, EXPLAIN ANALYZE'd over 1,000,000 pipelines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { sqlOf, type Sql } from '../index.js';
import { pipelineSearchStatement, planPipelineSearch, searchPipelines, type PipelineSearch, type SearchPlan } from './pipeline-search.js';

const PIPELINES = 40_000;
const APP = 1;
const OTHER = 2;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const h = (k: number) => `(abs(hashint8(i * 31 + ${k})) % 1000)`;

let database: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  sql = sqlOf(database.db);
  const q = (text: string, values: unknown[] = []) => sql.pool.query(text, values);
  await q(`INSERT INTO applications (id, name) VALUES (${APP}, 'A'), (${OTHER}, 'B')`);
  await q(
    `INSERT INTO schedules (id, application_id, name, name_key, kind, interval_seconds, definition, plan_anchor)
     SELECT s, CASE WHEN s <= 10 THEN ${APP} ELSE ${OTHER} END, 'Sched-' || s, 'sched-' || s, 'Interval', 60, '{}'::jsonb, now()
     FROM generate_series(1, 20) s`,
  );
  // Every 11th pipeline is the other application's; the newest 0.5% are not terminal.
  await q(
    `INSERT INTO pipelines (id, application_id, name, trace_id, status, schedule_id, created_at, finished_at)
     SELECT i, app, name, md5(i::text), status::"PipelineStatus",
            CASE WHEN ${h(5)} < 100 THEN 1 WHEN ${h(5)} < 200 THEN 2 + i % 8 END + CASE WHEN app = ${OTHER} THEN 10 ELSE 0 END,
            c, CASE WHEN status IN ('Completed', 'Failed', 'Cancelled') THEN c + interval '2 seconds' END
     FROM (SELECT i, CASE WHEN i % 11 = 0 THEN ${OTHER} ELSE ${APP} END AS app,
                  CASE WHEN ${h(1)} < 300 THEN 'nightly-report-' || (i % 50) WHEN ${h(1)} < 700 THEN 'sync-' || (i % 500)
                       WHEN ${h(1)} < 990 THEN 'job-' || (i % 10000) ELSE 'Rare-Backfill-' || (i % 100) END AS name,
                  CASE WHEN i > $1 * 0.995 THEN (ARRAY['Running', 'Pending', 'NotStarted', 'Paused'])[1 + i % 4]
                       WHEN ${h(2)} < 900 THEN 'Completed' WHEN ${h(2)} < 970 THEN 'Failed' ELSE 'Cancelled' END AS status,
                  $2::timestamptz + (i * 1000 + ${h(3)}) * interval '1 millisecond' AS c
           FROM generate_series(1, $1::int) i) x`,
    [PIPELINES, new Date(T0)],
  );
  await q(
    `INSERT INTO pipeline_keywords (pipeline_id, key, value)
     SELECT i, k.key, k.value FROM generate_series(1, $1::int) i
     CROSS JOIN LATERAL (VALUES ('env', CASE WHEN ${h(6)} < 700 THEN 'prod' WHEN ${h(6)} < 950 THEN 'staging' ELSE 'dev' END),
                                ('tenant', 't' || (abs(hashint8(i * 31 + 8)) % 2000)),
                                ('priority', CASE WHEN ${h(9)} < 10 THEN 'high' END)) AS k(key, value)
     WHERE k.value IS NOT NULL`,
    [PIPELINES],
  );
  await q(
    `INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, options, span_id, status, created_at)
     SELECT p.id, p.application_id, k, 's' || k,
            CASE WHEN k = 0 THEN 'extract' WHEN abs(hashint8(p.id * 31 + 10)) % 1000 < 900 THEN 'load'
                 WHEN abs(hashint8(p.id * 31 + 10)) % 1000 < 999 THEN 'transform' ELSE 'load-special' END,
            '{}'::jsonb, '0000000000000000', CASE WHEN p.status = 'Completed' THEN 'Completed' ELSE 'NotStarted' END::"StageStatus", p.created_at
     FROM pipelines p CROSS JOIN generate_series(0, 1) k`,
  );
  // Statistics, and the visibility map autovacuum keeps on a table that is mostly history.
  await q('VACUUM ANALYZE');
}, 120_000);
afterAll(async () => {
  await database?.drop();
});

const search = (s: Partial<PipelineSearch>): PipelineSearch => ({
  applicationId: APP,
  statuses: [],
  namePrefix: null,
  keywords: [],
  scheduleNameKey: null,
  createdAfter: null,
  createdBefore: null,
  stageHandlerName: null,
  after: null,
  take: 51,
  ...s,
});
/** A position deep in the history: the 20,000th pipeline. */
const deep = { createdAt: new Date(T0 + 20_000 * 1000 + 999), id: 20_000 };

const cases: [string, Partial<PipelineSearch>][] = [
  ['no filter', {}],
  ['no filter, a deep page', { after: deep }],
  ['status (common)', { statuses: ['Completed'] }],
  ['status (rare) + createdAfter', { statuses: ['Cancelled'], createdAfter: new Date(T0 + 10_000_000) }],
  ['statuses + a window', { statuses: ['Failed', 'Cancelled'], createdAfter: new Date(T0 + 5_000_000), createdBefore: new Date(T0 + 6_000_000) }],
  ['status, a deep page', { statuses: ['Failed'], after: deep }],
  ['name prefix (common)', { namePrefix: 'nightly' }],
  ['name prefix (rare)', { namePrefix: 'rare-backfill-7' }],
  ['name prefix (one name)', { namePrefix: 'job-1234' }],
  ['name prefix (rare), a deep page', { namePrefix: 'rare-backfill-7', after: deep }],
  ['keyword KEY=VALUE (common)', { keywords: [{ key: 'env', value: 'prod' }] }],
  ['keyword KEY=VALUE (rare)', { keywords: [{ key: 'tenant', value: 't42' }] }],
  ['keyword KEY (rare)', { keywords: [{ key: 'priority', value: null }] }],
  ['keywords, two', { keywords: [{ key: 'env', value: 'staging' }, { key: 'tenant', value: 't7' }] }],
  ['keyword (common), a deep page', { keywords: [{ key: 'env', value: 'prod' }], after: deep }],
  ['stageHandlerName (common)', { stageHandlerName: 'transform' }],
  ['stageHandlerName (rare)', { stageHandlerName: 'load-special' }],
  ['scheduleName (large)', { scheduleNameKey: 'sched-1' }],
  ['scheduleName (small)', { scheduleNameKey: 'sched-5' }],
  ['status + keyword + name', { statuses: ['Completed'], keywords: [{ key: 'tenant', value: 't99' }], namePrefix: 'job' }],
];

/** How the search runs it: its plan (probe), then the page, in one snapshot without parallel workers. */
async function explain(s: PipelineSearch): Promise<{ plan: SearchPlan; text: string }> {
  return sql.transaction(
    async (tx) => {
      await tx.query({ name: 'plan_setup', text: `SELECT set_config('max_parallel_workers_per_gather', '0', true)`, custom: true });
      const plan = (await planPipelineSearch(tx, s))!;
      const { statement, values } = pipelineSearchStatement(s, plan);
      const explained = { name: 'plan', text: `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${statement.text}`, custom: true };
      const rows = await tx.query<{ 'QUERY PLAN': string }>(explained, values);
      return { plan, text: rows.map((r) => r['QUERY PLAN']).join('\n') };
    },
    { readOnly: true },
  );
}
const plan = async (s: PipelineSearch) => (await explain(s)).text;

/** The same selection by the plainest query, the oracle of the page. */
async function oracle(s: PipelineSearch): Promise<number[]> {
  const { rows } = await sql.pool.query<{ id: string }>(
    `SELECT p.id FROM pipelines p
     WHERE p.application_id = $1
       AND (cardinality($2::text[]) = 0 OR p.status::text = ANY($2))
       AND ($3::text IS NULL OR left(lower(p.name), length($3)) = lower($3))
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements($4::jsonb) f
                       WHERE NOT EXISTS (SELECT 1 FROM pipeline_keywords k WHERE k.pipeline_id = p.id AND k.key = f->>'key'
                                         AND (f->>'value' IS NULL OR k.value = f->>'value')))
       AND ($5::text IS NULL OR p.schedule_id = (SELECT id FROM schedules WHERE application_id = $1 AND name_key = $5))
       AND ($6::timestamptz IS NULL OR p.created_at >= $6) AND ($7::timestamptz IS NULL OR p.created_at < $7)
       AND ($8::text IS NULL OR EXISTS (SELECT 1 FROM stages st WHERE st.pipeline_id = p.id AND st.handler_name = $8))
       AND ($9::timestamptz IS NULL OR (p.created_at, p.id) < ($9, $10::bigint))
     ORDER BY p.created_at DESC, p.id DESC LIMIT $11`,
    [
      s.applicationId,
      s.statuses,
      s.namePrefix,
      JSON.stringify(s.keywords),
      s.scheduleNameKey,
      s.createdAfter,
      s.createdBefore,
      s.stageHandlerName,
      s.after?.createdAt ?? null,
      s.after?.id ?? null,
      s.take,
    ],
  );
  return rows.map((r) => Number(r.id));
}

describe('GET /pipelines plans over 40,000 pipelines (decision 0089)', () => {
  it.each(cases)('%s: no sequential scan of pipelines, pipeline_keywords or stages; the page is the plain scan’s', async (_name, partial) => {
    const s = search(partial);
    const text = await plan(s);
    expect(text, text).not.toMatch(/Seq Scan on (pipelines|pipeline_keywords|stages)\b/);
    expect(text, text).toMatch(/Index (Only )?Scan/);
    const page = await searchPipelines(sql, s);
    const want = await oracle(s);
    expect(page.map((p) => p.id)).toEqual(want);
    expect(want.length).toBeGreaterThan(0);
  });

  it('the newest-first walk reads about a page, not the table (no filter: Limit over the (application_id, created_at, id) index)', async () => {
    const text = await plan(search({}));
    expect(text).toMatch(/Index (Only )?Scan using pipelines_application_id_created_at_id_idx/);
    expect(text).toMatch(/rows=51 loops=1/);
  });

  it('a filter with few matches drives the page from its own index, whatever the estimates; one with many is walked', async () => {
    const driven: [Partial<PipelineSearch>, string, RegExp][] = [
      [{ namePrefix: 'rare-backfill-7' }, 'name', /Index Only Scan using pipelines_search_name_idx/],
      [{ keywords: [{ key: 'tenant', value: 't42' }] }, 'keyword', /Index (Only )?Scan using pipeline_keywords_key_value_pipeline_id_idx/],
      [{ stageHandlerName: 'load-special' }, 'handler', /Index (Only )?Scan using stages_application_id_handler_name_pipeline_id_idx/],
      // The rarer of two filters drives; the other is checked per match.
      [{ namePrefix: 'sync-', keywords: [{ key: 'tenant', value: 't42' }] }, 'keyword', /pipeline_keywords_key_value_pipeline_id_idx/],
    ];
    for (const [partial, kind, index] of driven) {
      const { plan: chosen, text } = await explain(search(partial));
      expect(chosen.driver?.kind, text).toBe(kind);
      expect(text).toMatch(index);
    }
    for (const partial of [{ namePrefix: 'nightly' }, { keywords: [{ key: 'env', value: 'prod' }] }, { stageHandlerName: 'transform' }]) {
      const { plan: chosen, text } = await explain(search(partial));
      expect(chosen.driver, text).toBeNull();
      expect(text).toMatch(/pipelines_application_id_created_at_id_idx/);
    }
  });

  it('a search naming a schedule the application does not have reads no pipelines', async () => {
    await sql.transaction(async (tx) => {
      expect(await planPipelineSearch(tx, search({ scheduleNameKey: 'nope' }))).toBeUndefined();
      expect(await planPipelineSearch(tx, search({ scheduleNameKey: 'sched-11' }))).toBeUndefined();
    });
    expect(await searchPipelines(sql, search({ scheduleNameKey: 'sched-11' }))).toEqual([]);
  });
});
