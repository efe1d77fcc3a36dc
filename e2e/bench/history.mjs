// BENCH_HISTORY=N: N finished pipelines already in the database when a phase starts, so that a
// cost growing with history shows. Built once, with set-based SQL, into a template database
// named from N and a hash of the migrations (and of this seed), kept for later runs; each phase's
// database is then a CREATE DATABASE … TEMPLATE copy. The template holds the bench application
// (made by the admin command); its id is kept in the database's comment, with the seed's figures.
import { createHash, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../../deploy/local/stack.mjs';
import { databaseUrl, withAdmin } from './cluster.mjs';

const PREFIX = 'po_bench_hist_';
/** Bump when the seed below changes, so cached templates are rebuilt. */
const SEED_VERSION = 1;
const CHUNK = 50_000; // pipelines per INSERT … SELECT round
const DAYS = 30; // history spread over the past 30 days, ending an hour ago

// StageOptions as the API stores them for a stage created without options (addendum §4).
export const OPTIONS = {
  runNextIfFailed: false,
  retryInterval: 0,
  maxRetries: 0,
  timeOut: null,
  retryOnErrorCodes: [],
  backoff: 'fixed',
  maxRetryInterval: null,
  jitter: false,
  dependsOn: [],
  runInParallelWith: [],
  failIfOutputEmpty: false,
  notifyOnFailure: false,
  runAsUser: null,
};

function migrationsHash(stages) {
  const dir = join(ROOT, 'libs/db/prisma/migrations');
  const hash = createHash('sha256').update(`seed ${SEED_VERSION}; stages ${stages}\n`);
  for (const m of readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()) {
    hash.update(`${m}\n`).update(readFileSync(join(dir, m, 'migration.sql')));
  }
  return hash.digest('hex').slice(0, 8);
}

export const historyTemplateName = (pipelines, stages) =>
  `${PREFIX}${pipelines}_${migrationsHash(stages)}`;

/** Drops every cached history template (BENCH_HISTORY_DROP=1); returns their names. */
export async function dropHistoryTemplates() {
  return withAdmin(async (a) => {
    const { rows } = await a.query(
      `SELECT datname FROM pg_database WHERE datname LIKE '${PREFIX.replaceAll('_', '\\_')}%'`,
    );
    for (const r of rows) await a.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`);
    return rows.map((r) => r.datname);
  });
}

async function describe(a, name) {
  const { rows } = await a.query(
    "SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = $1",
    [name],
  );
  if (rows.length === 0) return null;
  try {
    return JSON.parse(rows[0].c);
  } catch {
    return { broken: true };
  }
}

/**
 * The template for `pipelines` finished pipelines of `stages` stages: { name, applicationId,
 * seedSeconds, cached }. Builds it when missing (minutes for a million pipelines).
 */
export async function ensureHistoryTemplate(pipelines, stages, progress = (m) => console.error(m)) {
  const name = historyTemplateName(pipelines, stages);
  const existing = await withAdmin((a) => describe(a, name));
  if (existing && !existing.broken && existing.applicationId)
    return { name, ...existing, cached: true };
  const build = `${name}_build`;
  await withAdmin(async (a) => {
    if (existing) await a.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await a.query(`DROP DATABASE IF EXISTS ${build} WITH (FORCE)`);
    await a.query(`CREATE DATABASE ${build}`);
  });
  const started = Date.now();
  const env = { ...process.env, DATABASE_URL: databaseUrl(build) };
  execFileSync(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], {
    cwd: ROOT,
    env,
    stdio: 'ignore',
  });
  const app = JSON.parse(
    execFileSync(
      process.execPath,
      ['services/api-gateway/dist/admin/cli.js', 'apps', 'create', '--name', 'bench'],
      { cwd: ROOT, env },
    ).toString(),
  );
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  try {
    await seed(db, { pipelines, stages, applicationId: app.applicationId, progress, started });
  } finally {
    await db.end();
  }
  const seedSeconds = +((Date.now() - started) / 1000).toFixed(1);
  const info = {
    applicationId: app.applicationId,
    pipelines,
    stages,
    seedSeconds,
    builtAt: new Date().toISOString(),
  };
  await withAdmin(async (a) => {
    await a.query(`ALTER DATABASE ${build} RENAME TO ${name}`);
    await a.query(`COMMENT ON DATABASE ${name} IS '${JSON.stringify(info)}'`);
  });
  return { name, ...info, cached: false };
}

// The columns the seed writes.
const SEEDED = {
  workers:
    'id application_id instance_id worker_name handlers sdk_version hostname metadata status last_heartbeat_at in_flight processed failed created_at updated_at',
  pipelines:
    'id application_id name trace_id status dispatched dispatch_requested_at policies idempotency_key schedule_id created_at updated_at finished_at',
  idempotency_keys: 'application_id key pipeline_id intent_hash created_at',
  stages:
    'id pipeline_id application_id position name handler_name description input options policies is_event span_id status attempt retry_attempt failure_count last_failed_at last_error_code failure_disposition next_retry_at output current_execution_id approved rejection_reason decided_at created_at started_at finished_at',
  stage_executions:
    'id stage_id application_id attempt lease_owner leased_at lease_expires_at timeout_at dispatched_at ended_at end_reason',
};

/** Fails early, naming them, when the schema has NOT NULL columns without default the seed does not write. */
async function checkSchema(db) {
  const { rows } = await db.query(
    `SELECT table_name AS t, column_name AS c FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name = ANY($1) AND is_nullable = 'NO' AND column_default IS NULL`,
    [Object.keys(SEEDED)],
  );
  const missing = rows
    .filter((r) => !SEEDED[r.t].split(' ').includes(r.c))
    .map((r) => `${r.t}.${r.c}`);
  if (missing.length > 0)
    throw new Error(
      `history seed: the schema has NOT NULL columns the seed does not fill (update e2e/bench/history.mjs): ${missing.join(', ')}`,
    );
}

async function seed(db, { pipelines: n, stages: s, applicationId, progress, started }) {
  await checkSchema(db);
  // The rows are consistent by construction: no foreign-key triggers row by row.
  await db.query('SET session_replication_role = replica');
  await db.query('SET synchronous_commit = off');
  await db.query("SET maintenance_work_mem = '512MB'");
  const end = Date.now() - 3_600_000;
  const begin = end - DAYS * 86_400_000;
  const stepMs = (end - begin) / Math.max(1, n);
  const lastStageEndMs = 35 + 40 * (s - 1); // stage k runs from +20+40k ms to +35+40k ms
  const workers = [randomUUID(), randomUUID()];
  for (const [i, id] of workers.entries()) {
    await db.query(
      `INSERT INTO workers (id, application_id, instance_id, worker_name, handlers, sdk_version, hostname, metadata, status,
         last_heartbeat_at, in_flight, processed, failed, created_at, updated_at)
       VALUES ($1, $2, $3, NULL, ARRAY['work'], '@po/worker-sdk 0.5.0', 'history', NULL, 'Stopped', $5, 0, $6, 0, $4, $5)`,
      [id, applicationId, `history-${i}`, new Date(begin), new Date(end), Math.round((n * s) / 2)],
    );
  }
  for (let lo = 1; lo <= n; lo += CHUNK) {
    const hi = Math.min(n, lo + CHUNK - 1);
    await db.query('BEGIN');
    await db.query(
      `INSERT INTO pipelines (id, application_id, name, trace_id, status, dispatched, dispatch_requested_at, policies,
         idempotency_key, schedule_id, created_at, updated_at, finished_at)
       SELECT i, $1, 'hist-' || i, md5('trace-' || i), 'Completed', true, NULL, NULL, 'hist-' || i, NULL,
              t.c, t.c + $5::int * interval '1 millisecond', t.c + $5::int * interval '1 millisecond'
       FROM generate_series($2::bigint, $3::bigint) AS i
       CROSS JOIN LATERAL (SELECT $4::timestamptz + (i - 1) * $6::float8 * interval '1 millisecond' AS c) AS t`,
      [applicationId, lo, hi, new Date(begin), lastStageEndMs, stepMs],
    );
    await db.query(
      `INSERT INTO idempotency_keys (application_id, key, pipeline_id, intent_hash, created_at)
       SELECT application_id, idempotency_key, id, md5('intent-' || id) || md5('hash-' || id), created_at + interval '19 milliseconds'
       FROM pipelines WHERE id BETWEEN $1 AND $2`,
      [lo, hi],
    );
    // The execution id is a version-4-shaped uuid derived from the stage id.
    await db.query(
      `INSERT INTO stages (id, pipeline_id, application_id, position, name, handler_name, description, input, options, policies,
         is_event, span_id, status, attempt, retry_attempt, failure_count, last_failed_at, last_error_code, failure_disposition,
         next_retry_at, output, current_execution_id, approved, rejection_reason, decided_at, created_at, started_at, finished_at)
       SELECT x.sid, p.id, p.application_id, k, 's' || k, 'work', NULL, 'x' || k, $4::jsonb, NULL,
              false, substr(md5('span-' || x.sid), 1, 16), 'Completed', 1, 0, 0, NULL, NULL, NULL,
              NULL, 'x' || k, (substr(x.h, 1, 12) || '4' || substr(x.h, 14, 3) || '8' || substr(x.h, 18, 15))::uuid, NULL, NULL, NULL,
              p.created_at + interval '16 milliseconds',
              p.created_at + (20 + 40 * k) * interval '1 millisecond',
              p.created_at + (35 + 40 * k) * interval '1 millisecond'
       FROM pipelines p
       CROSS JOIN generate_series(0, $3::int - 1) AS k
       CROSS JOIN LATERAL (SELECT (p.id - 1) * $3::int + k + 1 AS sid, md5('execution-' || ((p.id - 1) * $3::int + k + 1)) AS h) AS x
       WHERE p.id BETWEEN $1 AND $2
       ORDER BY p.id, k`,
      [lo, hi, s, JSON.stringify(OPTIONS)],
    );
    await db.query(
      `INSERT INTO stage_executions (id, stage_id, application_id, attempt, lease_owner, leased_at, lease_expires_at, timeout_at,
         dispatched_at, ended_at, end_reason)
       SELECT st.current_execution_id, st.id, st.application_id, 1, CASE WHEN st.id % 2 = 0 THEN $3 ELSE $4 END,
              st.started_at, st.started_at + interval '60 seconds', NULL,
              st.started_at - interval '12 milliseconds', st.finished_at, 'result'
       FROM stages st WHERE st.pipeline_id BETWEEN $1 AND $2
       ORDER BY st.id`,
      [lo, hi, workers[0], workers[1]],
    );
    await db.query('COMMIT');
    progress(
      `bench: history ${hi}/${n} pipelines (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  }
  // Ids made by the services next must not collide with the seeded ones.
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
  progress(
    `bench: history vacuum (freeze, analyze) (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  await db.query('VACUUM (FREEZE, ANALYZE)');
}
