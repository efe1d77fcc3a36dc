import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../deploy/local/stack.mjs';
import { markLogs, recordAnswers, servedAnswers } from './support/answers.js';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unreadyServices } from './support/pipeline-stream.js';

const PIPELINES = 160;
const PACE_MS = 70;

/**
 * The next release's migrations, test-only: an expand-style column on the hottest table (its ALTER
 * needs an ACCESS EXCLUSIVE lock) and an index built CONCURRENTLY on it. The product's migrations
 * are the schema the running services were released with.
 */
const PENDING: Record<string, string> = {
  '29990101000000_stages_note': '-- Expand: nullable, no default, so no rewrite and nothing the running code must write.\nALTER TABLE "stages" ADD COLUMN "note" TEXT;\n',
  '29990101000001_stages_note_index': 'CREATE INDEX CONCURRENTLY IF NOT EXISTS "stages_application_id_note_idx" ON "stages"("application_id", "note");\n',
};

/** The real migrate command as a process, with its output so far. */
function migrateDeploy(env: Record<string, string | undefined>) {
  const child = spawn(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
  return { output: () => out, done };
}

/**
 * Issue 27, migrations during traffic: `migrate deploy` applies the next release's migrations
 * while the previous release's services create, run and serve pipelines, and a long transaction
 * keeps the first migration from its lock past lock_timeout, so it is rolled back and retried.
 */
describe('migrate deploy while the previous release serves traffic', () => {
  let cluster: Cluster;
  let key: string;
  let migrations: string;

  beforeAll(async () => {
    migrations = mkdtempSync(join(tmpdir(), 'po-e2e-migrations-'));
    cpSync(join(ROOT, 'libs', 'db', 'prisma', 'migrations'), migrations, { recursive: true });
    for (const [name, sql] of Object.entries(PENDING)) {
      mkdirSync(join(migrations, name));
      writeFileSync(join(migrations, name, 'migration.sql'), sql);
    }
    cluster = await startCluster();
    key = (await cluster.createApp('migrate-during-traffic')).apiKey;
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `migrate-during-traffic-${i}`,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '8',
      });
    }
  }, 120_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[migrate-during-traffic] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
    if (migrations) rmSync(migrations, { recursive: true, force: true });
  }, 60_000);

  it('answers every request 2xx the first time (the test\'s and the workers\'), completes every pipeline, and ends with the migrations applied and the index valid', async () => {
    const headers = { 'x-api-key': key };
    const logMarks = markLogs(cluster);
    const answers = recordAnswers();
    let streaming = true;
    let reads = 0;
    const reading = (async () => {
      while (streaming) {
        const list = await call(cluster.apiUrl, 'GET', '/pipelines?limit=10', { headers }).catch(() => undefined);
        const newest = list?.body?.items?.[0]?.id as number | undefined;
        if (newest !== undefined) await call(cluster.apiUrl, 'GET', `/pipelines/${newest}`, { headers }).catch(() => undefined);
        reads += 1;
        await sleep(100);
      }
    })();
    const creating = createStream(cluster, key, 'migrate', PIPELINES, PACE_MS);
    const direct = new pg.Client({ connectionString: cluster.database.url });
    await direct.connect();
    let deploy!: { code: number | null; out: string };
    let ids!: number[];
    try {
      await waitFor('pipelines flowing', async () => ((reads > 5 && answers.answers.some((a) => a.path === '/pipelines/idempotent')) || undefined), 20_000);
      // A long read, as a report would run: ACCESS SHARE on stages, held until the migration retried.
      await direct.query('BEGIN');
      await direct.query('SELECT count(*) FROM "stages"');
      const run = migrateDeploy({ ...cluster.env, MIGRATIONS_DIR: migrations, MIGRATION_DATABASE_URL: '', DATABASE_DIRECT_URL: '' });
      try {
        await waitFor('the migration to give up its first attempt', async () => run.output().includes('retrying') || undefined, 30_000);
      } finally {
        await direct.query('COMMIT');
      }
      deploy = await run.done;
      ids = await creating;
    } finally {
      streaming = false;
      await reading;
      answers.stop();
    }
    const served = servedAnswers(cluster, logMarks);
    console.log(
      `[migrate-during-traffic] ${ids.length} pipelines created, ${reads} read rounds; the services answered ${served.count} requests, the slowest ${served.slowest}; migrate said:\n${deploy.out.trim()}`,
    );

    const problems = await streamProblems(cluster, key, ids, 45_000);
    const { rows: history } = await direct.query(
      `SELECT migration_name AS name, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS "rolledBack"
       FROM _prisma_migrations WHERE migration_name LIKE '2999%' ORDER BY migration_name`,
    );
    const { rows: index } = await direct.query(`SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'stages_application_id_note_idx'::regclass`);
    await direct.end();

    expect(deploy.code, deploy.out).toBe(0);
    expect(deploy.out).toMatch(/29990101000000_stages_note could not take a lock within \d+ ms \(attempt 1 of \d+\); rolled back, retrying/);
    expect({
      created: ids.length,
      failedRequests: answers.failures(),
      failedAnswersServed: served.failures,
      // A call the SDK gave up on (its request timeout) shows in no access log; the flaky stage's planned failures aside.
      workerComplaints: cluster.workers.flatMap((w) => w.lines.filter((l) => /"level":"(warn|error)"/.test(l) && !l.includes('"errorCode":"FLAKY"'))),
      problems,
      unready: await unreadyServices(cluster),
      history,
      index,
    }).toEqual({
      created: PIPELINES,
      failedRequests: [],
      failedAnswersServed: [],
      workerComplaints: [],
      problems: [],
      unready: [],
      history: Object.keys(PENDING).map((name) => ({ name, finished: true, rolledBack: false })),
      index: [{ valid: true }],
    });
  }, 110_000);
});
