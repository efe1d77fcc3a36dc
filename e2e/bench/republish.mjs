// BENCH_ONLY=republish (issue 29, item 3; decision 0124): Redis loses everything while many stages
// wait for a worker. Not a test: it asserts nothing, it measures.
//
// The bench runs api-gateway and pipeline-service (no workers, no scheduler) on a redis-server of
// its own (no persistence, a free port), so it can FLUSHALL without touching the shared Redis.
// BENCH_REPUBLISH_QUEUES Interval schedules, each on a handler no worker serves, are backfilled
// 1,000 ticks a request until BENCH_REPUBLISH_STAGES one-stage pipelines exist; pipeline-service
// dispatches them (one Pending stage and one StageNext message each). Once every message is in
// Redis, the bench FLUSHALLs and counts the waiting StageNext jobs every 100 ms until all are back:
// the time to the first, the time to all, and stages republished per second. It also reports how
// many jobs more than stages there were at the end (a message published twice would be one).
//
// Environment (defaults in brackets):
//   BENCH_REPUBLISH_STAGES          Pending stages to lose and recover [100000]
//   BENCH_REPUBLISH_QUEUES          handlers (StageNext queues) they are spread over [4]
//   BENCH_REPUBLISH_TIMEOUT_SECONDS give up waiting for the republish after this long [900]
//   BENCH_NODE, BENCH_LOG_DIR, TEST_DATABASE_URL as in engine.mjs
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { readStageNextDepths } from '@po/queues';
import { startBenchCluster } from './cluster.mjs';
import { benchDb } from './pgwork.mjs';
import { boxCalibrationMs } from './box.mjs';
import { postmasterOf, startResourceMeter } from './resources.mjs';
import { putSchedule } from './schedules-common.mjs';

const num = (name, fallback) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const STAGES = num('BENCH_REPUBLISH_STAGES', 100_000);
const QUEUES = num('BENCH_REPUBLISH_QUEUES', 4);
const TIMEOUT_MS = num('BENCH_REPUBLISH_TIMEOUT_SECONDS', 900) * 1000;
const TICKS_PER_BACKFILL = 1000;
const INTERVAL_SECONDS = 10;
const progress = (m) => console.error(`bench: republish: ${m}`);
const seconds = (ms) => +(ms / 1000).toFixed(2);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A redis-server of the bench's own, without persistence; resolves with { url, stop }. */
async function startRedis() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.on('exit', () => child.kill('SIGKILL'));
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; ; i += 1) {
    const probe = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') break;
    } catch {
      if (i > 200) throw new Error(`redis-server on ${port} did not start`);
    } finally {
      probe.disconnect();
    }
    await sleep(50);
  }
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function post(cluster, path, body) {
  const res = await fetch(`${cluster.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': cluster.apiKey },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  if (res.status < 200 || res.status > 299)
    throw new Error(`POST ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** Creates the schedules and backfills them until `STAGES` pipelines exist; resolves with their handlers. */
async function createPendingStages(cluster) {
  const handlers = Array.from({ length: QUEUES }, (_, i) => `lost-${i}`);
  for (const handler of handlers) {
    const put = await putSchedule(cluster, `republish-${handler}`, {
      kind: 'Interval',
      intervalSeconds: INTERVAL_SECONDS,
      overlapPolicy: 'Allow',
      definition: {
        name: `republish-${handler}`,
        stages: [{ stageName: 'only', stageHandlerName: handler, input: 'x' }],
      },
    });
    if (put.id === null) throw new Error(`PUT schedule: ${put.status} ${put.error}`);
  }
  // Past ranges, each of TICKS_PER_BACKFILL ticks, one schedule after another.
  const end = Math.floor(Date.now() / 1000 / INTERVAL_SECONDS) * INTERVAL_SECONDS - 3600;
  const chunks = Math.ceil(STAGES / TICKS_PER_BACKFILL);
  let created = 0;
  for (let c = 0; c < chunks; c += 1) {
    const ticks = Math.min(TICKS_PER_BACKFILL, STAGES - created);
    const handler = handlers[c % handlers.length];
    const round = Math.floor(c / handlers.length);
    const to = end - round * TICKS_PER_BACKFILL * INTERVAL_SECONDS;
    const from = to - ticks * INTERVAL_SECONDS;
    const r = await post(cluster, `/schedules/republish-${handler}/backfill`, {
      from: new Date(from * 1000).toISOString(),
      to: new Date(to * 1000).toISOString(),
    });
    created += r.created;
    if (c % 10 === 9 || c === chunks - 1) progress(`backfilled ${created}/${STAGES} pipelines`);
  }
  return handlers;
}

/**
 * StageNext messages waiting in the bench's queues: the seed's dispatches are batch jobs (decision
 * 0127), the walk's republished messages single jobs; readStageNextDepths counts messages in both.
 */
async function waitingJobs(redis, prefix, applicationId, handlers) {
  const depths = await readStageNextDepths(
    redis,
    prefix,
    handlers.map((h) => `app_${applicationId}_${h}_StageNext`),
  );
  return depths.reduce((sum, d) => sum + d.waiting, 0);
}

export async function benchRepublish(log = console.log) {
  const boxMs = boxCalibrationMs();
  const redisServer = await startRedis();
  const cluster = await startBenchCluster({
    services: ['api-gateway', 'pipeline-service'],
    env: { REDIS_URL: redisServer.url },
    label: 'republish',
  });
  const redis = new Redis(redisServer.url);
  let db;
  try {
    db = await benchDb(cluster.directUrl);
    const prefix = cluster.env.QUEUE_PREFIX;
    const seedStarted = Date.now();
    const handlers = await createPendingStages(cluster);
    const count = () => waitingJobs(redis, prefix, cluster.applicationId, handlers);
    for (;;) {
      const [n, { rows }] = await Promise.all([
        count(),
        db.query(`SELECT count(*)::int AS n FROM stages WHERE status = 'Pending'`),
      ]);
      if (n >= STAGES && rows[0].n >= STAGES) break;
      if (cluster.failure()) throw new Error(cluster.failure());
      if (Date.now() - seedStarted > TIMEOUT_MS)
        throw new Error(
          `seed: ${rows[0].n} Pending stages, ${n} messages after ${TIMEOUT_MS / 1000} s`,
        );
      await sleep(500);
    }
    const seedSeconds = seconds(Date.now() - seedStarted);
    const { rows: ages } = await db.query(
      `SELECT extract(epoch FROM now() - min(dispatched_at))::float8 AS oldest, extract(epoch FROM now() - max(dispatched_at))::float8 AS newest
       FROM stage_executions WHERE ended_at IS NULL`,
    );
    progress(`${STAGES} Pending stages, their messages in Redis (${seedSeconds} s); FLUSHALL`);

    const meter = await startResourceMeter({
      processes: { 'pipeline-service': cluster.pids['pipeline-service'] },
      postmasterPid: postmasterOf(db.backendPid),
      redis,
    });
    const flushedAt = Date.now();
    await redis.flushall();
    let firstBackMs = null;
    let back = 0;
    let lastProgress = flushedAt;
    while (back < STAGES) {
      if (Date.now() - flushedAt > TIMEOUT_MS) break;
      if (cluster.failure()) throw new Error(cluster.failure());
      await sleep(100);
      back = await count();
      if (back > 0 && firstBackMs === null) firstBackMs = Date.now() - flushedAt;
      if (Date.now() - lastProgress > 10_000) {
        progress(`${back}/${STAGES} republished after ${seconds(Date.now() - flushedAt)} s`);
        lastProgress = Date.now();
      }
    }
    const allBackMs = back >= STAGES ? Date.now() - flushedAt : null;
    const usage = await meter.end();
    // Anything still on its way shows up as a surplus.
    await sleep(2000);
    const surplus = (await count()) - STAGES;
    const line = {
      bench: 'republish',
      stages: STAGES,
      queues: QUEUES,
      seedSeconds,
      // How long before the FLUSHALL the messages were published (the walk's age threshold applies).
      dispatchedSecondsBeforeFlush: {
        oldest: +ages[0].oldest.toFixed(1),
        newest: +ages[0].newest.toFixed(1),
      },
      firstBackSeconds: firstBackMs === null ? null : seconds(firstBackMs),
      allBackSeconds: allBackMs === null ? null : seconds(allBackMs),
      republishedWithinTimeout: back,
      stagesPerSecond:
        allBackMs === null
          ? +(back / (TIMEOUT_MS / 1000)).toFixed(1)
          : +(STAGES / (allBackMs / 1000)).toFixed(1),
      surplusJobs: surplus,
      // From the FLUSHALL to the last message back. PostgreSQL's is the whole server's.
      cpuSeconds: {
        pipelineService: usage.processes['pipeline-service'].cpuSeconds,
        postgres: usage.postgresCpuSeconds,
        redis: usage.redisCpuSeconds,
      },
      redisCommandsPerStage:
        usage.redisCommands === null ? null : +(usage.redisCommands / STAGES).toFixed(1),
      boxCalibrationMs: boxMs,
    };
    log(JSON.stringify(line));
    return line;
  } finally {
    await db?.end().catch(() => {});
    await redis.quit().catch(() => {});
    await cluster.stop();
    await redisServer.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchRepublish();
