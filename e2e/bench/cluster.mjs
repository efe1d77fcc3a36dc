// Starts the services as processes over a fresh database for a benchmark run (builtins, pg and
// ioredis only), configured as `npm run up` and the Helm chart run them: default log level (info,
// one line per request), tracing off unless the caller passes OTEL_* variables, each service's
// stdout written to a log file as a container runtime would (BENCH_LOG_DIR, else a temporary
// directory removed by stop()). BENCH_CPU_PROF=DIR writes a CPU profile per service on exit.
// `replicas` runs a service as several processes (e.g. { 'scheduler-service': 2 }): they are then
// named `<service>-1`, `<service>-2` … in pids, logs and stop reports; one replica keeps the plain name.
// `pooler: 'pgbouncer'` puts a PgBouncer of its own (transaction mode, 20 server connections) between
// the services and PostgreSQL, as platform teams run them (DATABASE_URL with pgbouncer=true,
// DATABASE_DIRECT_URL for the caches' LISTEN; decision 0116): `poolerPid`.
import { execFileSync, spawn } from 'node:child_process';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  rmSync,
  statSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { startPgBouncer } from '@po/testing';
import { ROOT } from '../../deploy/local/stack.mjs';
import { benchNode } from './runtime.mjs';

export const ADMIN_URL =
  process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ALL_SERVICES = [
  'api-gateway',
  'worker-gateway',
  'pipeline-service',
  'result-consumer',
  'scheduler-service',
];
const STOP_TIMEOUT_MS = 30_000;

const canListen = (port) =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

// Ports below the kernel's ephemeral range (32768–60999 by default): a port the kernel picked for
// `listen(0)` comes from that range, where the services started before take the local ports of
// their own connections to PostgreSQL and Redis, and one of them could take it before the service
// meant to listen on it starts (seen as EADDRINUSE). Never the same port twice in one bench.
const handedOut = new Set();
async function freePort() {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!handedOut.has(port) && (await canListen(port))) {
      handedOut.add(port);
      return port;
    }
  }
}

/** URL of database `name` on the admin server. */
export function databaseUrl(name) {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs fn with a client on the admin database (postgres). */
export async function withAdmin(fn) {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** { n, p50, p90, p99, max } of a list of numbers (ms); nulls when it is empty. */
export function summarize(values) {
  if (values.length === 0) return { n: 0, p50: null, p90: null, p99: null, max: null };
  const sorted = Float64Array.from(values).sort();
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  const r = (v) => Math.round(v * 10) / 10;
  return {
    n: sorted.length,
    p50: r(at(50)),
    p90: r(at(90)),
    p99: r(at(99)),
    max: r(sorted[sorted.length - 1]),
  };
}

async function countLines(file) {
  let lines = 0;
  for await (const chunk of createReadStream(file)) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  }
  return lines;
}

/** The environment of the services: the caller's, without tracing (OTEL_*) unless `extra` sets it. */
function serviceEnv(extra) {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
  return { ...env, ...extra };
}

/**
 * Starts the services over a new database: migrated from scratch, or cloned from `template`
 * ({ name, applicationId }: a migrated database that already holds the bench application; a new
 * API key is made for it). `label` names the log and profile files. `replicas`: service → number
 * of processes (default 1 each). Resolves once every /readyz answers 200.
 */
export async function startBenchCluster({
  services = ALL_SERVICES,
  env: extra = {},
  label = 'bench',
  template,
  replicas = {},
  pooler = 'direct',
  redisClusterNodes,
} = {}) {
  // Each process of the cluster: its name (the service's, or `<service>-<n>` with several
  // replicas) and the service it runs.
  const instances = services.flatMap((service) => {
    const n = Math.max(1, Math.floor(replicas[service] ?? 1));
    return Array.from({ length: n }, (_, i) => ({
      name: n === 1 ? service : `${service}-${i + 1}`,
      service,
    }));
  });
  const name = `po_bench_${randomBytes(4).toString('hex')}`;
  const startedCloneAt = Date.now();
  await withAdmin((admin) =>
    admin.query(
      template
        ? `CREATE DATABASE ${name} TEMPLATE ${template.name} STRATEGY FILE_COPY`
        : `CREATE DATABASE ${name}`,
    ),
  );
  const cloneSeconds = template ? +((Date.now() - startedCloneAt) / 1000).toFixed(2) : null;
  const bouncer = pooler === 'pgbouncer' ? await startPgBouncer({ poolSize: 20 }) : null;
  const env = serviceEnv({
    DATABASE_URL: bouncer ? bouncer.url(name) : databaseUrl(name),
    ...(bouncer ? { DATABASE_DIRECT_URL: databaseUrl(name) } : {}),
    ...(redisClusterNodes ? { REDIS_CLUSTER_NODES: redisClusterNodes } : { REDIS_URL }),
    QUEUE_PREFIX: `pobench:${name}`,
    HOST: '127.0.0.1',
    ...extra,
  });
  const ownLogDir = !process.env.BENCH_LOG_DIR;
  const logDir = process.env.BENCH_LOG_DIR ?? mkdtempSync(join(tmpdir(), 'po-bench-logs-'));
  mkdirSync(logDir, { recursive: true });
  const procs = new Map(); // process name -> child
  const exits = new Map(); // process name -> { code, signal, atMs }
  let stopping = false;
  let stopped = null;
  let cleaned = null;
  const killAll = () =>
    procs.forEach((p) => p.exitCode === null && p.signalCode === null && p.kill('SIGKILL'));
  process.on('exit', killAll); // never leave services behind if the bench dies

  async function cleanup() {
    cleaned ??= (async () => {
      process.off('exit', killAll);
      // A Redis Cluster of the bench's own is stopped whole by its owner.
      if (!redisClusterNodes) {
        const redis = new Redis(REDIS_URL);
        let cursor = '0';
        do {
          const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${env.QUEUE_PREFIX}:*`, 'COUNT', 1000);
          cursor = nextCursor;
          if (keys.length > 0) await redis.unlink(...keys);
        } while (cursor !== '0');
        await redis.quit();
      }
      await bouncer?.stop();
      await withAdmin((a) => a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      if (ownLogDir) rmSync(logDir, { recursive: true, force: true });
    })();
    return cleaned;
  }

  let app;
  const urls = {};
  const logFiles = {};
  try {
    if (!template)
      execFileSync(benchNode().path, ['libs/db/scripts/migrate.mjs', 'deploy'], {
        cwd: ROOT,
        env: { ...env, DATABASE_URL: databaseUrl(name) },
        stdio: 'ignore',
      });
    for (const { name: service, service: program } of instances) {
      const port = await freePort();
      urls[service] = `http://127.0.0.1:${port}`;
      logFiles[service] = join(logDir, `${label}-${service}.log`);
      const out = openSync(logFiles[service], 'w');
      const profile = process.env.BENCH_CPU_PROF
        ? [
            '--cpu-prof',
            `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`,
            `--cpu-prof-name=${label}-${service}.cpuprofile`,
          ]
        : [];
      const child = spawn(benchNode().path, [...profile, `services/${program}/dist/main.js`], {
        cwd: ROOT,
        env: { ...env, PORT: String(port), METRICS_PORT: String(await freePort()) },
        stdio: ['ignore', out, 'inherit'],
      });
      closeSync(out);
      child.once('exit', (code, signal) => {
        exits.set(service, { code, signal, atMs: Date.now() });
        if (!stopping)
          console.error(
            `bench: ${service} exited (${signal ?? `code ${code}`}) during the run; see ${logFiles[service]}`,
          );
      });
      procs.set(service, child);
    }
    for (const [service, u] of Object.entries(urls)) {
      for (;;) {
        if (exits.has(service))
          throw new Error(`${service} exited before it was ready (see ${logFiles[service]})`);
        try {
          if ((await fetch(`${u}/readyz`)).status === 200) break;
        } catch {
          /* starting */
        }
        await sleep(100);
      }
    }
    const admin = (...args) =>
      JSON.parse(
        execFileSync(benchNode().path, ['services/api-gateway/dist/admin/cli.js', ...args], {
          cwd: ROOT,
          env,
        }).toString(),
      );
    app = template
      ? admin('apps', 'keys', 'create', '--app', String(template.applicationId))
      : admin('apps', 'create', '--name', 'bench');
  } catch (err) {
    stopping = true;
    killAll();
    await Promise.all(
      [...procs.values()].map(
        (p) =>
          new Promise((r) =>
            p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', r),
          ),
      ),
    );
    await cleanup();
    throw err;
  }

  const firstUrl = (service) => urls[service] ?? urls[`${service}-1`];
  return {
    env,
    databaseName: name,
    /** The phase's database on PostgreSQL itself (never through the pooler): for the bench's own queries. */
    directUrl: databaseUrl(name),
    cloneSeconds,
    apiUrl: firstUrl('api-gateway'),
    workerUrl: firstUrl('worker-gateway'),
    apiKey: app.apiKey,
    applicationId: app.applicationId,
    /** process name (the service, or `<service>-<n>` with replicas) → pid */
    pids: Object.fromEntries([...procs].map(([s, p]) => [s, p.pid])),
    /** The PgBouncer's pid with `pooler: 'pgbouncer'`, else null. */
    poolerPid: bouncer?.pid ?? null,
    /** process name → its log file (removed by stop() unless BENCH_LOG_DIR is set) */
    logFiles: { ...logFiles },
    /** A service that exited on its own, as text, or null. */
    failure() {
      const dead = [...exits]
        .filter(() => !stopping)
        .map(([s, e]) => `${s} exited (${e.signal ?? `code ${e.code}`})`);
      return dead.length > 0 ? dead.join(', ') : null;
    },
    /**
     * SIGTERM to every service, SIGKILL after 30 s; resolves with service → { stopMs, code,
     * signal, logBytes, logLines }. The database and queues are kept until stop().
     */
    stopServices() {
      stopped ??= (async () => {
        stopping = true;
        const t0 = Date.now();
        for (const p of procs.values())
          if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
        const timer = setTimeout(killAll, STOP_TIMEOUT_MS);
        await Promise.all(
          [...procs.values()].map(
            (p) =>
              new Promise((r) =>
                p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', r),
              ),
          ),
        );
        clearTimeout(timer);
        const out = {};
        for (const service of procs.keys()) {
          const e = exits.get(service);
          out[service] = {
            stopMs: e ? Math.max(0, e.atMs - t0) : null,
            code: e?.code ?? null,
            signal: e?.signal ?? null,
            logBytes: statSync(logFiles[service]).size,
            logLines: await countLines(logFiles[service]),
          };
        }
        return out;
      })();
      return stopped;
    },
    /** Stops the services (if still running), then removes the database, the queues' keys and the log directory it made. */
    async stop() {
      try {
        await this.stopServices();
      } finally {
        await cleanup();
      }
    },
  };
}
