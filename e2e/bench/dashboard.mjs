// The dashboard's pipelines list over BENCH_DASHBOARD_PIPELINES (100,000) pipelines: Debian's
// headless Chromium opens /ui/pipelines again and again, and each time the page itself records
// the time from navigation start to the frame that first shows the first page of rows (a
// MutationObserver installed before any page script, then the next animation frame). Two series
// in one signed-in tab: `cached` (the hashed assets from the HTTP cache, as for a returning user)
// and `noCache` (the browser cache disabled: every navigation downloads and parses the bundle
// again). Not a test: it asserts nothing, it measures (issue 13: under 1 s locally).
//
//   BENCH_ONLY=dashboard npm run bench      or, after `npx turbo run build`:  node e2e/bench/dashboard.mjs
//
// The data set is built once with set-based SQL into a template database named from the size and
// a hash of the migrations and of this seed (`po_bench_dashboard_<N>_<hash>`, as search.mjs
// does), kept for later runs; each run serves a copy, dropped at the end. BENCH_DASHBOARD_DROP=1
// drops the cached templates instead. Only the api-gateway runs: it serves /ui/ and the API.
//
// Environment: BENCH_DASHBOARD_PIPELINES, BENCH_DASHBOARD_RUNS (40 per series),
// CHROMIUM_PATH (/usr/bin/chromium), TEST_DATABASE_URL (admin connection), REDIS_URL.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../../deploy/local/stack.mjs';
import { launchChromium } from '../support/chromium.mjs';
import { databaseUrl, startBenchCluster, summarize, withAdmin } from './cluster.mjs';
import { OPTIONS as STAGE_OPTIONS } from './history.mjs';

const PIPELINES = Number(process.env.BENCH_DASHBOARD_PIPELINES ?? 100_000);
const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS ?? 40);
const WARMUP = 3;
const PREFIX = 'po_bench_dashboard_';
/** Bump when the seed below changes, so cached templates are rebuilt. */
const SEED_VERSION = 1;
const log = (m) => console.error(`bench: ${m}`);

/** Pseudo-random 0..999 of row `i` in stream `k` (deterministic). */
const h = (i, k) => `(abs(hashint8(${i} * 31 + ${k})) % 1000)`;

/**
 * `n` pipelines of one application over the last 30 days, one every ~26 s: mostly finished
 * (Completed 90%, Failed 7%, Cancelled 3%), the newest 0.5% still running; three stages each; two
 * keywords; names from a few families, as a real application's history looks.
 */
async function seed(db, n, applicationId) {
  const started = Date.now();
  await db.query('SET session_replication_role = replica');
  await db.query('SET synchronous_commit = off');
  const end = Date.now() - 60_000;
  const stepMs = (30 * 86_400_000) / n;
  await db.query('BEGIN');
  await db.query(
    `INSERT INTO pipelines (id, application_id, name, trace_id, status, dispatched, created_at, updated_at, finished_at)
     SELECT i, $1::int, name, md5('trace-' || i), status::"PipelineStatus", true, c, c + interval '3 seconds',
            CASE WHEN status IN ('Completed', 'Failed', 'Cancelled') THEN c + interval '3 seconds' END
     FROM (
       SELECT i,
              CASE WHEN ${h('i', 1)} < 400 THEN 'nightly-report-' || (i % 40)
                   WHEN ${h('i', 1)} < 700 THEN 'import-customers-' || (ARRAY['eu', 'us', 'ap'])[1 + i % 3]
                   ELSE 'job-' || (i % 5000) END AS name,
              CASE WHEN i > $2::bigint * 0.995 THEN 'Running'
                   WHEN ${h('i', 2)} < 900 THEN 'Completed' WHEN ${h('i', 2)} < 970 THEN 'Failed' ELSE 'Cancelled' END AS status,
              $3::timestamptz - (($2::bigint - i) * $4::float8) * interval '1 millisecond' AS c
       FROM generate_series(1, $2::bigint) AS i) x`,
    [applicationId, n, new Date(end), stepMs],
  );
  await db.query(
    `INSERT INTO pipeline_keywords (pipeline_id, key, value)
     SELECT i, k.key, k.value FROM generate_series(1, $1::bigint) AS i
     CROSS JOIN LATERAL (VALUES ('env', CASE WHEN ${h('i', 6)} < 700 THEN 'prod' ELSE 'staging' END),
                                ('tenant', 't' || (abs(hashint8(i * 31 + 8)) % 500))) AS k(key, value)`,
    [n],
  );
  await db.query(
    `INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, input, options, span_id, status, attempt,
                         created_at, started_at, finished_at)
     SELECT p.id, p.application_id, k, (ARRAY['extract', 'transform', 'load'])[k + 1], (ARRAY['extract', 'transform', 'load'])[k + 1],
            '', $1::jsonb, substr(md5('span-' || p.id || '-' || k), 1, 16),
            (CASE WHEN p.status = 'Completed' THEN 'Completed'
                  WHEN p.status = 'Failed' THEN CASE WHEN k < 2 THEN 'Completed' ELSE 'Failed' END
                  WHEN p.status = 'Cancelled' THEN CASE WHEN k = 0 THEN 'Completed' ELSE 'Cancelled' END
                  ELSE CASE WHEN k = 0 THEN 'Running' ELSE 'NotStarted' END END)::"StageStatus",
            CASE WHEN p.status = 'Running' AND k > 0 THEN 0 ELSE 1 END,
            p.created_at, p.created_at + k * interval '1 second', p.finished_at
     FROM pipelines p CROSS JOIN generate_series(0, 2) AS k
     ORDER BY p.id, k`,
    [JSON.stringify(STAGE_OPTIONS)],
  );
  await db.query('COMMIT');
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
  await db.query('VACUUM (FREEZE, ANALYZE)');
  return +((Date.now() - started) / 1000).toFixed(1);
}

function templateName(n) {
  const dir = join(ROOT, 'libs/db/prisma/migrations');
  const hash = createHash('sha256').update(`dashboard seed ${SEED_VERSION}\n`);
  for (const m of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
    hash.update(`${m}\n`).update(readFileSync(join(dir, m, 'migration.sql')));
  }
  return `${PREFIX}${n}_${hash.digest('hex').slice(0, 8)}`;
}

/** The template of `n` pipelines: { name, applicationId, seedSeconds, cached }; built when missing. */
async function ensureTemplate(n) {
  const name = templateName(n);
  const existing = await withAdmin(async (a) => {
    const { rows } = await a.query("SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = $1", [name]);
    if (rows.length === 0) return null;
    try {
      return JSON.parse(rows[0].c);
    } catch {
      return { broken: true };
    }
  });
  if (existing && !existing.broken && existing.applicationId) return { name, ...existing, cached: true };
  const build = `${name}_build`;
  await withAdmin(async (a) => {
    if (existing) await a.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await a.query(`DROP DATABASE IF EXISTS ${build} WITH (FORCE)`);
    await a.query(`CREATE DATABASE ${build}`);
  });
  const env = { ...process.env, DATABASE_URL: databaseUrl(build) };
  execFileSync(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], { cwd: ROOT, env, stdio: 'ignore' });
  const app = JSON.parse(
    execFileSync(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'create', '--name', 'dashboard-bench'], { cwd: ROOT, env }).toString(),
  );
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  let seedSeconds;
  try {
    log(`dashboard seed: ${n} pipelines`);
    seedSeconds = await seed(db, n, app.applicationId);
  } finally {
    await db.end();
  }
  const info = { applicationId: app.applicationId, pipelines: n, seedSeconds, builtAt: new Date().toISOString() };
  await withAdmin(async (a) => {
    await a.query(`ALTER DATABASE ${build} RENAME TO ${name}`);
    await a.query(`COMMENT ON DATABASE ${name} IS '${JSON.stringify(info)}'`);
  });
  return { name, ...info, cached: false };
}

/**
 * Runs in the page before its own scripts: notes when the Pipelines table first holds rows that
 * link to a pipeline, then the next animation frame (the frame that paints them).
 */
const OBSERVER = `(() => {
  const firstRows = () => {
    const table = document.querySelector('table[aria-label="Pipelines"]');
    if (!table) return 0;
    return [...table.querySelectorAll('tr')].filter((r) => r.querySelector('a[href*="/pipelines/"]')).length;
  };
  const observer = new MutationObserver(() => {
    const rows = firstRows();
    if (rows === 0) return;
    observer.disconnect();
    const inDomAt = performance.now();
    // When the list's GET /pipelines answered, inside the same navigation (resource timing).
    const api = performance.getEntriesByType('resource').find((e) => new URL(e.name).pathname === '/pipelines');
    requestAnimationFrame(() => {
      window.__poFirstRows = { inDomAt, frameAt: performance.now(), apiStartAt: api ? api.startTime : null, apiDoneAt: api ? api.responseEnd : null, url: api ? api.name : null, rows };
    });
  });
  observer.observe(document, { childList: true, subtree: true });
})();`;

async function openList(page, url) {
  await page.goto(`${url}/ui/pipelines`, { waitUntil: 'commit' });
  // A function, not a string: the page's CSP (no 'unsafe-eval') refuses a predicate given as text.
  await page.waitForFunction(() => globalThis.__poFirstRows !== undefined, undefined, { timeout: 30_000, polling: 50 });
  return page.evaluate('window.__poFirstRows');
}

async function series(page, url, label) {
  for (let i = 0; i < WARMUP; i++) await openList(page, url);
  const frame = [];
  const dom = [];
  const api = [];
  let rows = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await openList(page, url);
    frame.push(r.frameAt);
    dom.push(r.inDomAt);
    if (r.apiDoneAt !== null) api.push(r.apiDoneAt);
    rows = r.rows;
  }
  const result = { ...summarize(frame), rowsInDomP50: summarize(dom).p50, apiAnsweredP50: summarize(api).p50, rows };
  log(`${label}: p50 ${result.p50} ms, p99 ${result.p99} ms (${rows} rows; GET /pipelines answered at p50 ${result.apiAnsweredP50} ms)`);
  return result;
}

async function main() {
  if (process.env.BENCH_DASHBOARD_DROP === '1') {
    const dropped = await withAdmin(async (a) => {
      const { rows } = await a.query(`SELECT datname FROM pg_database WHERE datname LIKE '${PREFIX.replaceAll('_', '\\_')}%'`);
      for (const r of rows) await a.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`);
      return rows.map((r) => r.datname);
    });
    console.log(JSON.stringify({ metric: 'dashboard', dropped }));
    return;
  }
  const template = await ensureTemplate(PIPELINES);
  log(`template ${template.name} (${template.cached ? 'cached' : `built in ${template.seedSeconds} s`})`);
  const cluster = await startBenchCluster({ services: ['api-gateway'], label: 'dashboard', template });
  let browser;
  try {
    const index = await fetch(`${cluster.apiUrl}/ui/pipelines`);
    if (index.status !== 200) throw new Error(`GET /ui/pipelines answered ${index.status}: is libs/dashboard built and served by the api-gateway?`);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.addInitScript(OBSERVER);
    const page = await context.newPage();
    // Sign in once: the key stays in this tab's sessionStorage across the navigations below.
    await page.goto(`${cluster.apiUrl}/ui/`);
    await page.getByLabel('API key').fill(cluster.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 30_000 });

    const cached = await series(page, cluster.apiUrl, 'cached assets');
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const noCache = await series(page, cluster.apiUrl, 'no browser cache');
    console.log(
      JSON.stringify({
        metric: 'dashboard',
        what: 'navigation start to the frame showing the first page of /ui/pipelines rows, ms',
        pipelines: PIPELINES,
        runsPerSeries: RUNS,
        chromium: browser.version(),
        cloneSeconds: cluster.cloneSeconds,
        cached,
        noCache,
      }),
    );
  } finally {
    await browser?.close();
    await cluster.stop();
  }
}

await main();
