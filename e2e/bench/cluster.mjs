// Starts the services as processes over a fresh database for a benchmark run (builtins + pg only).
import { execFileSync, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ROOT } from '../../deploy/local/stack.mjs';

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export async function startBenchCluster({ services = ['api-gateway', 'worker-gateway', 'pipeline-service', 'result-consumer', 'scheduler-service'], env: extra = {} } = {}) {
  const name = `po_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const env = { ...process.env, DATABASE_URL: url.toString(), REDIS_URL, QUEUE_PREFIX: `pobench:${name}`, HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', ...extra };
  execFileSync(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], { cwd: ROOT, env, stdio: 'ignore' });
  const procs = [];
  const urls = {};
  for (const service of services) {
    const port = await freePort();
    urls[service] = `http://127.0.0.1:${port}`;
    // BENCH_LOG_DIR keeps each service's log lines (request durations) for profiling a run.
    const out = process.env.BENCH_LOG_DIR ? openSync(`${process.env.BENCH_LOG_DIR}/${service}.log`, 'w') : 'ignore';
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, `--cpu-prof-name=${service}.cpuprofile`] : [];
    procs.push(spawn(process.execPath, [...profile, `services/${service}/dist/main.js`], { cwd: ROOT, env: { ...env, PORT: String(port) }, stdio: ['ignore', out, 'inherit'] }));
  }
  for (const u of Object.values(urls)) {
    for (;;) {
      try {
        if ((await fetch(`${u}/readyz`)).status === 200) break;
      } catch {
        /* starting */
      }
      await sleep(100);
    }
  }
  const app = JSON.parse(execFileSync(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'create', '--name', 'bench'], { cwd: ROOT, env }).toString());
  return {
    env,
    apiUrl: urls['api-gateway'],
    workerUrl: urls['worker-gateway'],
    apiKey: app.apiKey,
    /**
     * Waits until every pipeline is terminal, then reads each one once. The wait asks PostgreSQL
     * directly (one count per 100 ms) so the benchmark does not load the API it measures.
     */
    async waitAllTerminal(ids) {
      const db = new pg.Client({ connectionString: env.DATABASE_URL });
      await db.connect();
      for (;;) {
        const { rows } = await db.query(
          "SELECT count(*)::int AS n FROM pipelines WHERE id = ANY($1::bigint[]) AND status IN ('Completed','Failed','Cancelled')",
          [ids],
        );
        if (rows[0].n === ids.length) break;
        await sleep(100);
      }
      await db.end();
      const headers = { 'x-api-key': app.apiKey };
      return Promise.all(ids.map(async (id) => (await fetch(`${urls['api-gateway']}/pipelines/${id}`, { headers })).json()));
    },
    /** stageId → first execution's dispatched and published instants (ms), read from PostgreSQL. */
    async executionTimes() {
      const db = new pg.Client({ connectionString: env.DATABASE_URL });
      await db.connect();
      const { rows } = await db.query('SELECT stage_id, dispatched_at, published_at FROM stage_executions ORDER BY dispatched_at');
      await db.end();
      const times = new Map();
      for (const r of rows) {
        const id = Number(r.stage_id);
        if (!times.has(id)) times.set(id, { dispatchedAt: r.dispatched_at.getTime(), publishedAt: r.published_at?.getTime() ?? null });
      }
      return times;
    },
    async stop() {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r() : p.once('exit', r)))));
      const redis = new Redis(REDIS_URL);
      let cursor = '0';
      do {
        const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${env.QUEUE_PREFIX}:*`, 'COUNT', 1000);
        cursor = nextCursor;
        if (keys.length > 0) await redis.unlink(...keys);
      } while (cursor !== '0');
      await redis.quit();
      const a = new pg.Client({ connectionString: ADMIN_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}
