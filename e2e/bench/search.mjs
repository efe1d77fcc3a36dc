// GET /pipelines over BENCH_SEARCH_PIPELINES (1,000,000) pipelines of one application (and a
// tenth as many of another, interleaved): p50/p99 of the first page and of deep pages (page
// BENCH_SEARCH_DEPTH, 20: a thousand pipelines in, reached by following nextCursor), per filter,
// through the api-gateway process over HTTP, one request at a time (decision 0089, docs/search.md).
// Not a test: it asserts nothing, it measures.
//
//   node e2e/bench/search.mjs        (after `npx turbo run build`; prints one JSON line on stdout)
//
// The data set is built once, with set-based SQL, into a template database named from the size
// and a hash of the migrations and of this seed (`po_bench_search_<N>_<hash>`, a few minutes for a
// million pipelines, about 2 GB), and kept for later runs; each run serves a CREATE DATABASE …
// TEMPLATE copy, dropped at the end. BENCH_SEARCH_DROP=1 drops the cached templates instead.
// Spread of the seed: names (nightly-report-* 30%, import-customers-* 20%, sync-* 20%, job-* 29%,
// Rare-Backfill-* 1%), statuses (the newest 0.5% not terminal; then Completed 90%, Failed 7%,
// Cancelled 3%), keywords (env: prod 70%, staging 25%, dev 5%; region: eu/us/ap; tenant: 2000
// values; priority=high on 1%), 20 schedules (sched-1: 10% of the pipelines, the others share
// 10%), two stages (extract; then load 90%, transform 9.9%, load-special 0.1%).
//
// Environment: BENCH_SEARCH_PIPELINES, BENCH_SEARCH_REQUESTS (200 per filter and page kind),
// BENCH_SEARCH_DEPTH (20), TEST_DATABASE_URL (admin connection), REDIS_URL.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../../deploy/local/stack.mjs';
import { databaseUrl, startBenchCluster, summarize, withAdmin } from './cluster.mjs';
import { OPTIONS as STAGE_OPTIONS } from './history.mjs';

const PIPELINES = Number(process.env.BENCH_SEARCH_PIPELINES ?? 1_000_000);
const REQUESTS = Number(process.env.BENCH_SEARCH_REQUESTS ?? 200);
const DEPTH = Number(process.env.BENCH_SEARCH_DEPTH ?? 20);
const PREFIX = 'po_bench_search_';
/** Bump when the seed below changes, so cached templates are rebuilt. */
const SEED_VERSION = 1;
const log = (m) => console.error(`bench: ${m}`);

const CHUNK = 100_000;
const DAYS = 30;

const OPTIONS = JSON.stringify(STAGE_OPTIONS);

/** Schedules per application: `sched-1` holds a tenth of the pipelines, the others share another tenth. */
const SCHEDULES = 20;

/** Pseudo-random 0..999 of row `i` in stream `k` (deterministic). */
const h = (i, k) => `(abs(hashint8(${i} * 31 + ${k})) % 1000)`;

async function seedSearchHistory(db, { pipelines: n, apps: [appA, appB], progress }) {
  const started = Date.now();
  const total = n + Math.floor(n / 10);
  await db.query('SET session_replication_role = replica');
  await db.query('SET synchronous_commit = off');
  await db.query("SET maintenance_work_mem = '512MB'");
  const end = Date.now() - 3_600_000;
  const begin = end - DAYS * 86_400_000;
  const stepMs = (end - begin) / total;

  // Schedules: sched-1 … sched-20 for both applications (ids 1..20 of A, 21..40 of B).
  await db.query(
    `INSERT INTO schedules (id, application_id, name, name_key, kind, interval_seconds, definition, plan_anchor, created_at, updated_at)
     SELECT s + (a.k - 1) * $3::int, a.app, 'Sched-' || s, 'sched-' || s, 'Interval', 60,
            '{"name":"x","stages":[{"stageName":"s","stageHandlerName":"h"}]}'::jsonb, $4::timestamptz, $4::timestamptz, $4::timestamptz
     FROM generate_series(1, $3::int) s CROSS JOIN (VALUES (1, $1::int), (2, $2::int)) AS a(k, app)`,
    [appA, appB, SCHEDULES, new Date(begin)],
  );

  for (let lo = 1; lo <= total; lo += CHUNK) {
    const hi = Math.min(total, lo + CHUNK - 1);
    await db.query('BEGIN');
    // Every 11th pipeline is B's. The newest 0.5% are not terminal yet.
    await db.query(
      `INSERT INTO pipelines (id, application_id, name, trace_id, status, dispatched, policies, idempotency_key, schedule_id,
                              created_at, updated_at, finished_at)
       SELECT i, app, name, md5('trace-' || i), status::"PipelineStatus", true, NULL, NULL,
              CASE WHEN ${h('i', 5)} < 100 THEN 1 WHEN ${h('i', 5)} < 200 THEN 2 + (i % ($8::int - 1)) END
                + CASE WHEN app = $2::int THEN $8::int ELSE 0 END,
              c, c + interval '2 seconds', CASE WHEN status IN ('Completed', 'Failed', 'Cancelled') THEN c + interval '2 seconds' END
       FROM (
         SELECT i, CASE WHEN i % 11 = 0 THEN $2::int ELSE $1::int END AS app,
                CASE WHEN ${h('i', 1)} < 300 THEN 'nightly-report-' || (i % 50)
                     WHEN ${h('i', 1)} < 500 THEN 'import-customers-' || (ARRAY['eu', 'us', 'ap'])[1 + i % 3]
                     WHEN ${h('i', 1)} < 700 THEN 'sync-' || (i % 500)
                     WHEN ${h('i', 1)} < 990 THEN 'job-' || (i % 10000)
                     ELSE 'Rare-Backfill-' || (i % 100) END AS name,
                CASE WHEN i > $7::bigint * 0.995 THEN (ARRAY['Running', 'Running', 'Running', 'Running', 'Pending', 'Pending', 'Pending',
                                                              'NotStarted', 'NotStarted', 'Paused'])[1 + ${h('i', 2)} % 10]
                     WHEN ${h('i', 2)} < 900 THEN 'Completed' WHEN ${h('i', 2)} < 970 THEN 'Failed' ELSE 'Cancelled' END AS status,
                $5::timestamptz + ((i - 1) * $6::float8 + ${h('i', 3)}) * interval '1 millisecond' AS c
         FROM generate_series($3::bigint, $4::bigint) AS i) x`,
      [appA, appB, lo, hi, new Date(begin), stepMs, total, SCHEDULES],
    );
    // Keywords: env (prod 70%, staging 25%, dev 5%), region (eu, us, ap), tenant (2000 values), priority=high on 1%.
    await db.query(
      `INSERT INTO pipeline_keywords (pipeline_id, key, value)
       SELECT i, k.key, k.value FROM generate_series($1::bigint, $2::bigint) AS i
       CROSS JOIN LATERAL (VALUES
         ('env', CASE WHEN ${h('i', 6)} < 700 THEN 'prod' WHEN ${h('i', 6)} < 950 THEN 'staging' ELSE 'dev' END),
         ('region', (ARRAY['eu', 'us', 'ap'])[1 + ${h('i', 7)} % 3]),
         ('tenant', 't' || (abs(hashint8(i * 31 + 8)) % 2000)),
         ('priority', CASE WHEN ${h('i', 9)} < 10 THEN 'high' END)) AS k(key, value)
       WHERE k.value IS NOT NULL
       ORDER BY i`,
      [lo, hi],
    );
    // Two stages: extract, then load (90%), transform (9.9%) or load-special (0.1%).
    await db.query(
      `INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, input, options, span_id, status, attempt,
                           created_at, started_at, finished_at)
       SELECT p.id, p.application_id, k, 's' || k,
              CASE WHEN k = 0 THEN 'extract' WHEN ${h('p.id', 10)} < 900 THEN 'load' WHEN ${h('p.id', 10)} < 999 THEN 'transform'
                   ELSE 'load-special' END,
              '', $3::jsonb, substr(md5('span-' || p.id || '-' || k), 1, 16),
              (CASE WHEN p.status = 'Completed' THEN 'Completed'
                    WHEN p.status = 'Failed' THEN CASE WHEN k = 0 THEN 'Completed' ELSE 'Failed' END
                    WHEN p.status = 'Cancelled' THEN CASE WHEN k = 0 THEN 'Completed' ELSE 'Cancelled' END
                    WHEN p.status = 'Running' THEN CASE WHEN k = 0 THEN 'Running' ELSE 'NotStarted' END
                    WHEN p.status = 'Pending' THEN CASE WHEN k = 0 THEN 'Pending' ELSE 'NotStarted' END
                    ELSE 'NotStarted' END)::"StageStatus",
              CASE WHEN p.status = 'NotStarted' THEN 0 ELSE 1 END,
              p.created_at, p.created_at + interval '1 second', p.finished_at
       FROM pipelines p CROSS JOIN generate_series(0, 1) AS k
       WHERE p.id BETWEEN $1 AND $2
       ORDER BY p.id, k`,
      [lo, hi, OPTIONS],
    );
    await db.query('COMMIT');
    progress(`search seed: ${hi}/${total} pipelines (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  }
  const { rows: serials } = await db.query(
    `SELECT table_name AS t, column_name AS c, pg_get_serial_sequence(quote_ident(table_name), column_name) AS seq
     FROM information_schema.columns WHERE table_schema = current_schema() AND column_default LIKE 'nextval(%'`,
  );
  for (const { t, c, seq } of serials) {
    if (!seq) continue;
    await db.query(
      `SELECT setval($1, m, true) FROM (SELECT max(${db.escapeIdentifier(c)}) AS m FROM ${db.escapeIdentifier(t)}) x WHERE m IS NOT NULL`,
      [seq],
    );
  }
  progress(`search seed: vacuum (freeze, analyze) (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  await db.query('VACUUM (FREEZE, ANALYZE)');
  return { total, seconds: +((Date.now() - started) / 1000).toFixed(1) };
}

function templateName(n) {
  const dir = join(ROOT, 'libs/db/prisma/migrations');
  const hash = createHash('sha256').update(`search seed ${SEED_VERSION}\n`);
  for (const m of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
    hash.update(`${m}\n`).update(readFileSync(join(dir, m, 'migration.sql')));
  }
  return `${PREFIX}${n}_${hash.digest('hex').slice(0, 8)}`;
}

async function describeTemplate(a, name) {
  const { rows } = await a.query("SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = $1", [name]);
  if (rows.length === 0) return null;
  try {
    return JSON.parse(rows[0].c);
  } catch {
    return { broken: true };
  }
}

/** The template of `n` pipelines: { name, applicationId, seedSeconds, cached }; built when missing. */
async function ensureTemplate(n) {
  const name = templateName(n);
  const existing = await withAdmin((a) => describeTemplate(a, name));
  if (existing && !existing.broken && existing.applicationId) return { name, ...existing, cached: true };
  const build = `${name}_build`;
  await withAdmin(async (a) => {
    if (existing) await a.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await a.query(`DROP DATABASE IF EXISTS ${build} WITH (FORCE)`);
    await a.query(`CREATE DATABASE ${build}`);
  });
  const env = { ...process.env, DATABASE_URL: databaseUrl(build) };
  execFileSync(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], { cwd: ROOT, env, stdio: 'ignore' });
  const admin = (...args) =>
    JSON.parse(execFileSync(process.execPath, ['services/api-gateway/dist/admin/cli.js', ...args], { cwd: ROOT, env }).toString());
  const a = admin('apps', 'create', '--name', 'search-bench');
  const b = admin('apps', 'create', '--name', 'search-bench-other');
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  let seeded;
  try {
    seeded = await seedSearchHistory(db, { pipelines: n, apps: [a.applicationId, b.applicationId], progress: log });
  } finally {
    await db.end();
  }
  const info = { applicationId: a.applicationId, pipelines: n, total: seeded.total, seedSeconds: seeded.seconds, builtAt: new Date().toISOString() };
  await withAdmin(async (adm) => {
    await adm.query(`ALTER DATABASE ${build} RENAME TO ${name}`);
    await adm.query(`COMMENT ON DATABASE ${name} IS '${JSON.stringify(info)}'`);
  });
  return { name, ...info, cached: false };
}

// ---------------------------------------------------------------------------------------------
// Scenarios: each is a list of queries drawn in turn (rotating values, so no two consecutive
// requests are the same).

const DAY = 86_400_000;
const pick = (list, i) => list[i % list.length];
const rand = (i, n) => Math.abs(Math.imul(i + 1, 2654435761) | 0) % n;

function scenarios(newest) {
  const day = (i) => new Date(newest - (2 + rand(i, 26)) * DAY).toISOString().slice(0, 10);
  return {
    none: () => '',
    status: (i) => `status=${pick(['Failed', 'Cancelled', 'Completed'], i)}`,
    statusRecent: (i) => `status=${pick(['Running', 'Pending', 'NotStarted'], i)}`,
    statusDay: (i) => `status=${pick(['Completed', 'Failed'], i)}&createdAfter=${day(i)}T00:00:00Z&createdBefore=${day(i)}T23:59:59.999Z`,
    statusesTwo: () => 'status=Failed&status=Cancelled',
    nameCommon: (i) => `name=${pick(['nightly', 'sync-', 'import-customers-eu', 'nightly-report-1'], i)}`,
    nameRare: (i) => `name=rare-backfill-${rand(i, 100)}`,
    nameExact: (i) => `name=job-${1000 + rand(i, 9000)}`,
    keywordCommon: (i) => `keyword=${encodeURIComponent(pick(['env=prod', 'env=staging', 'region=eu', 'region=us'], i))}`,
    keywordRare: (i) => `keyword=${encodeURIComponent(`tenant=t${rand(i, 2000)}`)}`,
    keywordKey: () => 'keyword=priority',
    keywordsTwo: (i) => `keyword=${encodeURIComponent('env=staging')}&keyword=${encodeURIComponent(`region=${pick(['eu', 'us', 'ap'], i)}`)}`,
    scheduleLarge: () => 'scheduleName=sched-1',
    scheduleSmall: (i) => `scheduleName=sched-${2 + rand(i, 19)}`,
    handlerCommon: () => 'stageHandlerName=transform',
    handlerRare: () => 'stageHandlerName=load-special',
    combined: (i) => `status=Completed&name=job&keyword=${encodeURIComponent(`tenant=t${rand(i, 2000)}`)}`,
  };
}

async function timed(url, key) {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { 'x-api-key': key } });
  const body = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body.slice(0, 300)}`);
  return { ms, page: JSON.parse(body) };
}

/** First pages: REQUESTS requests after 20 warm-up ones; deep pages: page DEPTH of a walk. */
async function measure(apiUrl, key, build) {
  const get = (query, cursor) => timed(`${apiUrl}/pipelines?${query}${cursor ? `${query ? '&' : ''}cursor=${cursor}` : ''}`, key);
  for (let i = 0; i < 20; i++) await get(build(i + 10_000));
  const first = [];
  let empty = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const { ms, page } = await get(build(i));
    first.push(ms);
    if (page.items.length === 0) empty++;
  }
  // Deep pages: walk to page DEPTH (or the last page) for a few values, then time that page again and again.
  const deepCursors = [];
  const depths = [];
  for (let i = 0; i < 8; i++) {
    const query = build(i);
    let pageNo = 1;
    let current = null;
    let { page } = await get(query);
    while (page.nextCursor !== null && pageNo < DEPTH) {
      current = page.nextCursor;
      pageNo++;
      ({ page } = await get(query, current));
    }
    if (current) {
      deepCursors.push([query, current]);
      depths.push(pageNo);
    }
  }
  const deep = [];
  for (let i = 0; deepCursors.length > 0 && i < REQUESTS; i++) {
    const [query, cursor] = deepCursors[i % deepCursors.length];
    deep.push((await get(query, cursor)).ms);
  }
  return {
    first: { ...summarize(first), emptyPages: empty },
    deep: deep.length > 0 ? { ...summarize(deep), depth: Math.min(...depths) } : null,
  };
}

async function main() {
  if (process.env.BENCH_SEARCH_DROP === '1') {
    const dropped = await withAdmin(async (a) => {
      const { rows } = await a.query(`SELECT datname FROM pg_database WHERE datname LIKE '${PREFIX.replaceAll('_', '\\_')}%'`);
      for (const r of rows) await a.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`);
      return rows.map((r) => r.datname);
    });
    console.log(JSON.stringify({ metric: 'search', dropped }));
    return;
  }
  const template = await ensureTemplate(PIPELINES);
  log(`template ${template.name} (${template.cached ? 'cached' : `built in ${template.seedSeconds} s`})`);
  const cluster = await startBenchCluster({ services: ['api-gateway'], label: 'search', template });
  try {
    const db = new pg.Client({ connectionString: cluster.env.DATABASE_URL });
    await db.connect();
    const { rows } = await db.query('SELECT max(created_at) AS newest FROM pipelines');
    await db.end();
    const results = {};
    for (const [name, build] of Object.entries(scenarios(rows[0].newest.getTime()))) {
      results[name] = await measure(cluster.apiUrl, cluster.apiKey, build);
      log(`${name}: first p50 ${results[name].first.p50} ms p99 ${results[name].first.p99} ms; deep p50 ${results[name].deep?.p50} ms p99 ${results[name].deep?.p99} ms`);
    }
    const worst = (kind) => Math.max(...Object.values(results).map((r) => r[kind]?.p99 ?? 0));
    console.log(
      JSON.stringify({
        metric: 'search',
        pipelines: PIPELINES,
        otherApplicationPipelines: template.total - PIPELINES,
        requestsPerKind: REQUESTS,
        depth: DEPTH,
        limit: 50,
        cloneSeconds: cluster.cloneSeconds,
        worstFirstPageP99Ms: worst('first'),
        worstDeepPageP99Ms: worst('deep'),
        filters: results,
      }),
    );
  } finally {
    await cluster.stop();
  }
}

await main();
