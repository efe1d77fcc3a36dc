// `npm run bench` (flow-control part, BENCH_ONLY=fairness; issue 31, decision 0132). Not a test: it
// asserts nothing, it measures. Two questions:
//
//   fairness  One key floods BENCH_FAIRNESS_FLOOD one-stage pipelines (concurrencyKey `flood`),
//             then, BENCH_FAIRNESS_SMALL_DELAY_MS after the last of them was created, ten small
//             keys (`small-1`..`small-10`) send BENCH_FAIRNESS_SMALL each, while the flood is being
//             worked. Every key's concurrencyLimit is 10,000, so only the shared capacity binds:
//             a handler limit, PUT /handlers/work {"maxConcurrent": BENCH_FAIRNESS_CAPACITY (16)},
//             with more worker slots than that (BENCH_FAIRNESS_SLOTS, 32) and a handler that holds
//             its slot BENCH_FAIRNESS_HANDLER_MS. Each stage's wait is its started_at (first lease)
//             minus its pipeline's created_at, read from PostgreSQL after the run: p50/p99 per small
//             key, all small keys, and the flood. Next to them, what strict FIFO gives for the
//             same arrivals: (a) simulated (simulateFifo) — until the first small stage arrives
//             only the flood is there, served oldest first under either policy; from then on, 16
//             servers serve the flood's measured backlog and every later arrival in order of
//             arrival, each stage holding a server 16 / (the keyed run's measured starts per second
//             while backlogged); (b) measured — the run without keys (below) is FIFO: every
//             StageNext job has the same BullMQ priority, and BullMQ keeps FIFO among equals (its
//             own rate differs, so its waits are FIFO at its rate, not the keyed run's).
//   cost      The same load several times per pair, in one sitting: `keyed` (the keys and the
//             handler limit, as above, on 32 slots), `keyed16` (the same on 16 slots) and `plain`
//             (no key, no handler_settings row, 16 worker slots: the capacity is bound by the
//             workers instead, so all run at about the same rate). keyed16 / plain is the cost
//             of keys and limits on one fleet; keyed / plain adds what 16 spare slots cost (each
//             acked stage's slot pulls again while a spare one takes the next message), and with
//             BENCH_FAIRNESS_FLEET=1 a third, `fleet` (no key, no limit, the keyed runs' 32 slots:
//             twice the rate, where batching makes a stage cheaper, so not the cost's yardstick). CPU of the five services, of
//             PostgreSQL (the backends of the run's database: the server is shared) and of Redis
//             (one of the run's own, for the same reason) over the measured run, divided by its
//             stages; the ratios keyed / plain and keyed / fleet per pair (issue 31's target:
//             under 1.10). `otherCores` is what the rest of the box used meanwhile (2 = both cores).
//             `postgresByOwner` splits the run database's backends by application_name (each
//             service names its pools): which service's statements the PostgreSQL CPU went to.
//
// Each run is on a fresh cluster (cluster.mjs, the engine bench's: five services as processes,
// production settings), after a warm-up of BENCH_FAIRNESS_WARMUP pipelines of the same kind through
// the same cluster, and carries boxCalibrationMs (box.mjs) timed just before it: the box's speed
// drifts, and other work on it shows there. One JSON line per run (`fairness.run`), then
// `fairness.summary` (waits, FIFO, cost per pair).
//
// Environment (defaults in brackets):
//   BENCH_FAIRNESS_FLOOD          pipelines of the flood key [5000]
//   BENCH_FAIRNESS_SMALL_KEYS     small keys [10]
//   BENCH_FAIRNESS_SMALL          pipelines per small key [20]
//   BENCH_FAIRNESS_SMALL_DELAY_MS after the flood's last creation, before the small keys' first [1500]
//   BENCH_FAIRNESS_CAPACITY       the handler's max_concurrent (keyed) = worker slots (plain) [16]
//   BENCH_FAIRNESS_SLOTS          worker slots in the keyed runs, over two processes [32]
//   BENCH_FAIRNESS_HANDLER_MS     how long the handler holds a slot [100]
//   BENCH_FAIRNESS_PAIRS          keyed/plain pairs [2]; the first keyed run gives the fairness figures
//   BENCH_FAIRNESS_SAME_FLEET     1: each pair also runs `keyed16` (keys and limit on 16 slots) [1]
//   BENCH_FAIRNESS_FLEET          1: each pair also runs `fleet` (no key, no limit, the keyed runs'
//                                 BENCH_FAIRNESS_SLOTS worker slots: the same fleet, unbound) [0]
//   BENCH_FAIRNESS_WARMUP         warm-up pipelines per run, left out of every figure [300]
//   BENCH_NODE, BENCH_STALL_SECONDS, BENCH_REPORT_DIR, TEST_DATABASE_URL, REDIS_URL as engine.mjs.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ADMIN_URL, startBenchCluster, summarize } from './cluster.mjs';
import { answerCounts, createPipeline } from './load.mjs';
import { benchDb, startPgWork } from './pgwork.mjs';
import {
  commandStatsPerUnit,
  cpuSeconds,
  postmasterOf,
  redisCommandStats,
  startResourceMeter,
} from './resources.mjs';
import { waitAllTerminal } from './stages.mjs';
import { benchNode } from './runtime.mjs';
import { boxCalibrationMs } from './box.mjs';
import { startWorkerProcesses } from './workers.mjs';

const num = (name, fallback) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
};
const FLOOD = num('BENCH_FAIRNESS_FLOOD', 5000);
const SMALL_KEYS = num('BENCH_FAIRNESS_SMALL_KEYS', 10);
const SMALL = num('BENCH_FAIRNESS_SMALL', 20);
const SMALL_DELAY_MS = num('BENCH_FAIRNESS_SMALL_DELAY_MS', 1500);
const CAPACITY = num('BENCH_FAIRNESS_CAPACITY', 16);
const SLOTS = num('BENCH_FAIRNESS_SLOTS', 32);
const HANDLER_MS = num('BENCH_FAIRNESS_HANDLER_MS', 100);
const PAIRS = Math.max(1, num('BENCH_FAIRNESS_PAIRS', 2));
const FLEET = num('BENCH_FAIRNESS_FLEET', 0) > 0;
const SAME_FLEET = num('BENCH_FAIRNESS_SAME_FLEET', 1) > 0;
const WARMUP = num('BENCH_FAIRNESS_WARMUP', 300);
const CREATORS = 8;
const HANDLER = 'work';
const KEY_LIMIT = 10_000; // large enough that no key's own limit binds: only the shared capacity

let reportDir;
function reportFile(name) {
  if (!reportDir) {
    reportDir = process.env.BENCH_REPORT_DIR ?? mkdtempSync(join(tmpdir(), 'po-bench-report-'));
    mkdirSync(reportDir, { recursive: true });
    console.error(`bench: reports in ${reportDir}`);
  }
  return join(reportDir, name);
}

const seconds = (ms) => +(ms / 1000).toFixed(2);
const perStage = (cpuSeconds, stages) =>
  cpuSeconds === null || stages <= 0 ? null : +((cpuSeconds * 1000) / stages).toFixed(3);

/** One stage of handler `work`; in a keyed run with its concurrency key. */
const definition = (key, keyed) => [
  {
    stageName: 's0',
    stageHandlerName: HANDLER,
    input: 'x',
    ...(keyed ? { options: { concurrencyKey: key, concurrencyLimit: KEY_LIMIT } } : {}),
  },
];

/** Creates the pipelines named in `plan` ([{ name, key }]) with `CREATORS` concurrent clients. */
async function createAll(cluster, plan, keyed) {
  const answers = new Array(plan.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATORS }, async () => {
      while (next < plan.length) {
        const i = next++;
        answers[i] = await createPipeline(cluster, plan[i].name, definition(plan[i].key, keyed));
      }
    }),
  );
  return answers;
}

const smallKey = (k) => `small-${k + 1}`;

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/**
 * A Redis of the run's own (no persistence): the box's Redis serves whoever else tests on it, and
 * INFO cpu is the whole server's. Resolves with { url, port, stop }.
 */
async function startOwnRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'po-bench-fair-redis-'));
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'no',
      '--save',
      '',
      '--daemonize',
      'no',
    ],
    { stdio: 'ignore' },
  );
  const kill = () => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');
  process.on('exit', kill);
  const stop = async () => {
    kill();
    if (child.exitCode === null && child.signalCode === null)
      await new Promise((r) => child.once('exit', r));
    process.off('exit', kill);
    rmSync(dir, { recursive: true, force: true });
  };
  const probe = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  probe.on('error', () => {}); // refused until the server listens
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (err) {
      if (i > 100) {
        await stop();
        throw new Error(`own redis-server on ${port} did not answer: ${err.message}`, {
          cause: err,
        });
      }
      probe.disconnect();
      await sleep(50);
    }
  }
  probe.disconnect();
  return { url: `redis://127.0.0.1:${port}`, port, stop };
}

/**
 * CPU of the PostgreSQL backends connected to the run's database (pg_stat_activity), sampled every
 * 500 ms so a backend that closes in between keeps its last reading: the server is shared with
 * whatever else runs on the box, whose backends the postmaster-wide figure would count too. The
 * bench's own connection (`ownPid`) is left out. end() → CPU seconds over the run.
 */
async function startBackendMeter(databaseName, ownPid) {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const first = new Map(); // pid -> CPU seconds when first seen (0 for a backend born during the run)
  const last = new Map();
  let started = false;
  const owner = new Map(); // pid -> application_name, else backend type (autovacuum worker, …)
  const sample = async () => {
    const { rows } = await admin.query(
      'SELECT pid, coalesce(nullif(application_name, \'\'), backend_type) AS owner FROM pg_stat_activity WHERE datname = $1 AND pid <> $2',
      [databaseName, ownPid],
    );
    for (const { pid, owner: name } of rows) {
      const cpu = cpuSeconds(pid);
      if (cpu === null) continue;
      if (!first.has(pid)) first.set(pid, started ? 0 : cpu);
      last.set(pid, cpu);
      owner.set(pid, name);
    }
  };
  await sample();
  started = true;
  let running = true;
  const loop = (async () => {
    while (running) {
      await sleep(500);
      if (running) await sample();
    }
  })();
  return {
    async end() {
      running = false;
      await loop;
      await sample();
      await admin.end();
      let total = 0;
      const byOwner = {};
      for (const [pid, cpu] of last) {
        total += cpu - first.get(pid);
        const name = owner.get(pid);
        byOwner[name] = (byOwner[name] ?? 0) + cpu - first.get(pid);
      }
      for (const name of Object.keys(byOwner)) byOwner[name] = +byOwner[name].toFixed(2);
      return { cpuSeconds: +total.toFixed(2), backends: last.size, byOwner };
    },
  };
}

/** Busy CPU seconds of the whole box so far (/proc/stat: all but idle and iowait), or null. */
function boxBusySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const [user, nice, system, , , irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + (steal ?? 0)) / 100;
  } catch {
    return null;
  }
}

/**
 * Strict FIFO for the same arrivals, replayed from the instant `t0` the first small stage arrived:
 * until then only the flood had arrived, and one key alone is served oldest first under either
 * policy, so what started before `t0` keeps its measured start. From `t0`, every stage not started
 * yet (the flood's measured backlog, then the later arrivals) is served in order of arrival (ties
 * by id) by `servers` servers, each stage holding one `holdMs` (servers / the measured throughput
 * while backlogged); the servers free up evenly over the first `holdMs`. Returns each stage's wait
 * (ms), by id.
 */
export function simulateFifo(stages, t0, servers, holdMs) {
  const waits = new Map();
  const rest = [];
  for (const r of stages) {
    if (r.started !== null && r.started < t0) waits.set(r.id, r.started - r.created);
    else rest.push(r);
  }
  rest.sort((a, b) => a.created - b.created || a.id - b.id);
  const free = Array.from({ length: servers }, (_, i) => t0 + (i * holdMs) / servers);
  for (const r of rest) {
    let s = 0;
    for (let i = 1; i < servers; i++) if (free[i] < free[s]) s = i;
    const start = Math.max(r.created, free[s]);
    free[s] = start + holdMs;
    waits.set(r.id, start - r.created);
  }
  return waits;
}

/** p50/p99 (and n, p90, max) of the waits of the stages whose group passes `pick`. */
const waitsOf = (rows, pick, waitOf) => summarize(rows.filter(pick).map(waitOf));

async function runOnce(mode, index, log) {
  const keyed = mode === 'keyed' || mode === 'keyed16';
  const label = `fairness-${mode}-${index}`;
  const boxMs = boxCalibrationMs(); // before anything of the run starts
  const ownRedis = await startOwnRedis();
  let cluster;
  let redis;
  let db;
  let workers;
  try {
    cluster = await startBenchCluster({ label, env: { REDIS_URL: ownRedis.url } });
    redis = new Redis(ownRedis.url);
    db = await benchDb(cluster.directUrl);
    if (keyed) {
      // The shared capacity: a handler limit, set as users set it (decision 0132).
      const res = await fetch(`${cluster.apiUrl}/handlers/${HANDLER}`, {
        method: 'PUT',
        headers: { 'x-api-key': cluster.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ maxConcurrent: CAPACITY }),
      });
      const text = await res.text();
      if (res.status !== 200)
        throw new Error(`PUT /handlers/${HANDLER} answered ${res.status}: ${text.slice(0, 300)}`);
      if (JSON.parse(text).maxConcurrent !== CAPACITY)
        throw new Error(
          `PUT /handlers/${HANDLER} did not set maxConcurrent: ${text.slice(0, 300)}`,
        );
    }
    // keyed: more slots than the limit, so the limit binds; keyed16 and plain: CAPACITY slots
    // (the same fleet, with and without keys and limit); fleet: the keyed runs' slots, unbound.
    const slots = mode === 'plain' || mode === 'keyed16' ? CAPACITY : SLOTS;
    workers = await startWorkerProcesses({ cluster, slots, label, handlerMs: HANDLER_MS });

    // Warm-up: the same kind of pipelines (keyed: spread over eleven keys) through this cluster.
    let warm = null;
    if (WARMUP > 0) {
      const t0 = Date.now();
      const plan = Array.from({ length: WARMUP }, (_, i) => ({
        name: `warm-${i}`,
        key: `warm-${i % 11}`,
      }));
      const answers = await createAll(cluster, plan, keyed);
      const ids = answers.filter((a) => a.id !== null).map((a) => a.id);
      if (ids.length < answers.length)
        throw new Error(`warm-up: ${answers.length - ids.length} creations failed`);
      await waitAllTerminal(cluster, db, ids);
      warm = { pipelines: ids.length, seconds: seconds(Date.now() - t0) };
    }

    const meter = await startResourceMeter({
      processes: { ...cluster.pids, ...workers.pids, bench: process.pid },
      postmasterPid: postmasterOf(db.backendPid),
      redis,
    });
    const pgWork = await startPgWork(db, cluster.databaseName);
    const backends = await startBackendMeter(cluster.databaseName, db.backendPid);
    const box0 = boxBusySeconds();
    const boxAt0 = Date.now();
    const cmdStats0 = await redisCommandStats(redis);

    const startedAt = Date.now();
    const floodPlan = Array.from({ length: FLOOD }, (_, i) => ({
      name: `flood-${i}`,
      key: 'flood',
    }));
    const floodAnswers = await createAll(cluster, floodPlan, keyed);
    const floodCreatedSeconds = seconds(Date.now() - startedAt);
    await sleep(SMALL_DELAY_MS);
    // The small keys' pipelines interleaved (small-1, small-2, …, small-10, small-1, …).
    const smallPlan = Array.from({ length: SMALL_KEYS * SMALL }, (_, i) => ({
      name: `${smallKey(i % SMALL_KEYS)}-${Math.floor(i / SMALL_KEYS)}`,
      key: smallKey(i % SMALL_KEYS),
    }));
    const smallAnswers = await createAll(cluster, smallPlan, keyed);
    const answers = [...floodAnswers, ...smallAnswers];
    const created = answerCounts(answers);
    if (created.firstError)
      console.error(
        `bench: ${label}: ${created.non2xx} creations failed, first: ${created.firstError}`,
      );
    const ids = answers.filter((a) => a.id !== null).map((a) => a.id);
    const end = await waitAllTerminal(cluster, db, ids);
    const usage = await meter.end(); // before anything stops
    const cmdStats1 = await redisCommandStats(redis);
    const box1 = boxBusySeconds();
    const boxAt1 = Date.now();
    const ownBackends = await backends.end();
    await workers.stop();
    await cluster.stopServices();
    const stages = ids.length;
    const pgFigures = await pgWork.finish({
      url: cluster.directUrl,
      units: stages,
      reportFile: reportFile(`${label}-top-statements.txt`),
    });
    db = await benchDb(cluster.directUrl);

    // Every stage: its group (from the pipeline's name), arrival (the pipeline's created_at) and first lease.
    const { rows } = await db.query(
      `SELECT s.id::int AS id, p.name, extract(epoch FROM p.created_at) * 1000 AS created,
              extract(epoch FROM s.started_at) * 1000 AS started, extract(epoch FROM s.finished_at) * 1000 AS finished
       FROM stages s JOIN pipelines p ON p.id = s.pipeline_id
       WHERE s.pipeline_id = ANY($1::bigint[])`,
      [ids],
    );
    for (const r of rows) {
      r.group = r.name.startsWith('flood-') ? 'flood' : r.name.slice(0, r.name.lastIndexOf('-'));
      r.created = Number(r.created);
      r.started = r.started === null ? null : Number(r.started);
      r.finished = r.finished === null ? null : Number(r.finished);
    }
    const ran = rows.filter((r) => r.started !== null);
    // Where a slot's time goes (the capacity counts a stage from Pending to its result applied):
    // first dispatch → first lease (queue and pull), lease → finished (handler and result), and the
    // mean number held (Little: throughput × mean(dispatch → finished)) while the flood waited.
    const { rows: execs } = await db.query(
      `SELECT e.stage_id::int AS id, extract(epoch FROM min(e.dispatched_at)) * 1000 AS dispatched
       FROM stage_executions e JOIN stages s ON s.id = e.stage_id
       WHERE s.pipeline_id = ANY($1::bigint[]) GROUP BY e.stage_id`,
      [ids],
    );
    const dispatchedAt = new Map(execs.map((e) => [e.id, Number(e.dispatched)]));
    const wait = (r) => r.started - r.created;
    const isSmall = (r) => r.group !== 'flood';
    const perKey = Object.fromEntries(
      Array.from({ length: SMALL_KEYS }, (_, k) => {
        const s = waitsOf(ran, (r) => r.group === smallKey(k), wait);
        return [smallKey(k), { p50: s.p50, p99: s.p99, max: s.max }];
      }),
    );

    // Throughput while backlogged: starts from the first small key's arrival to the flood's last
    // start (the flood still waits all along), per second; one slot's cycle is CAPACITY / that.
    const smallArrivals = ran.filter(isSmall).map((r) => r.created);
    const smallFirstAt = Math.min(...smallArrivals);
    const smallLastStart = Math.max(...ran.filter(isSmall).map((r) => r.started));
    const floodLastStart = Math.max(...ran.filter((r) => !isSmall(r)).map((r) => r.started));
    const backlogStarts = ran.filter(
      (r) => r.started >= smallFirstAt && r.started <= floodLastStart,
    ).length;
    // No backlog left when the small keys came (a flood too small for the box): FIFO waits nothing.
    const backlogPerSecond =
      floodLastStart > smallFirstAt
        ? backlogStarts / ((floodLastStart - smallFirstAt) / 1000)
        : null;
    const holdMs = backlogPerSecond ? (CAPACITY / backlogPerSecond) * 1000 : 0;
    const fifo = simulateFifo(rows, smallFirstAt, CAPACITY, holdMs);
    const fifoWait = (r) => fifo.get(r.id);
    const inBacklog = ran.filter(
      (r) => r.started >= smallFirstAt && r.started <= floodLastStart && dispatchedAt.has(r.id),
    );
    const meanHeld =
      backlogPerSecond && inBacklog.length
        ? (backlogPerSecond *
            inBacklog.reduce((s, r) => s + (r.finished - dispatchedAt.get(r.id)), 0)) /
          inBacklog.length /
          1000
        : null;
    const slot = {
      dispatchToLeaseMs: summarize(inBacklog.map((r) => r.started - dispatchedAt.get(r.id))),
      leaseToFinishedMs: summarize(inBacklog.map((r) => r.finished - r.started)),
      meanHeld: meanHeld === null ? null : +meanHeld.toFixed(1),
      // Starts per second in five equal slices of the backlogged span (first small arrival → the
      // flood's last start): whether the rate follows the size of the backlog.
      startsPerSecondBySlice: backlogPerSecond
        ? Array.from({ length: 5 }, (_, i) => {
            const len = (floodLastStart - smallFirstAt) / 5;
            const from = smallFirstAt + i * len;
            const n = ran.filter((r) => r.started >= from && r.started < from + len).length;
            return +(n / (len / 1000)).toFixed(1);
          })
        : null,
    };
    // Who got the turns while the small keys waited: starts per key from the last small creation
    // (every small key has arrived) to the first instant a small key had nothing left to start
    // (its last start), when all ten small keys and the flood were waiting. Fair turns give each
    // of the eleven keys the same number of starts there.
    const smallCreatedAll = Math.max(...smallArrivals);
    const firstKeyDone = Math.min(
      ...Array.from({ length: SMALL_KEYS }, (_, k) =>
        Math.max(...ran.filter((r) => r.group === smallKey(k)).map((r) => r.started)),
      ),
    );
    const window = ran.filter((r) => r.started >= smallCreatedAll && r.started <= firstKeyDone);
    const windowFlood = window.filter((r) => !isSmall(r)).length;
    const startsByKey = {};
    for (const r of window) startsByKey[r.group] = (startsByKey[r.group] ?? 0) + 1;
    const turns = {
      windowMs: Math.max(0, Math.round(firstKeyDone - smallCreatedAll)),
      starts: window.length,
      startsByKey,
      floodShare: window.length ? +(windowFlood / window.length).toFixed(3) : null,
      // With eleven keys taking turns, the flood's fair share is 1/11 while all ten small keys wait.
      floodFairShare: +(1 / (SMALL_KEYS + 1)).toFixed(3),
      // Small keys' creation: from the first to the last (they arrive over this span).
      smallArrivalSpanMs: Math.round(smallCreatedAll - smallFirstAt),
      // Of the whole span while any small stage waited, the flood's share of the starts.
      floodShareWhileAnySmallWaited: (() => {
        const w = ran.filter((r) => r.started >= smallFirstAt && r.started <= smallLastStart);
        return w.length ? +(w.filter((r) => !isSmall(r)).length / w.length).toFixed(3) : null;
      })(),
    };
    // The flood's backlog (created, not started) when the first small stage arrived.
    const floodBacklogAtSmallArrival = ran.filter(
      (r) => !isSmall(r) && r.created <= smallFirstAt && r.started > smallFirstAt,
    ).length;

    const processes = usage.processes;
    const serviceNames = Object.keys(cluster.pids);
    const sum = (names) => names.reduce((s, n) => s + (processes[n]?.cpuSeconds ?? 0), 0);
    const services = sum(serviceNames);
    const engineCpu =
      usage.redisCpuSeconds === null
        ? null
        : services + ownBackends.cpuSeconds + usage.redisCpuSeconds;
    // What the rest of the box did meanwhile: its busy CPU minus this run's processes, its
    // database's backends and its Redis (the postmaster's other work included).
    const oursCpu =
      Object.values(processes).reduce((s, p) => s + (p.cpuSeconds ?? 0), 0) +
      ownBackends.cpuSeconds +
      (usage.redisCpuSeconds ?? 0);
    const elapsedMs = end.endMs - startedAt;
    const line = {
      bench: 'fairness.run',
      mode,
      run: index,
      node: benchNode().version,
      boxCalibrationMs: boxMs,
      warmUp: warm,
      flood: FLOOD,
      smallKeys: SMALL_KEYS,
      perSmallKey: SMALL,
      smallDelayMs: SMALL_DELAY_MS,
      capacity: keyed
        ? `PUT /handlers/${HANDLER} maxConcurrent=${CAPACITY}`
        : `worker slots=${slots}`,
      workerSlots: slots,
      handlerMs: HANDLER_MS,
      created: ids.length,
      createNon2xx: created.non2xx,
      statusCounts: end.statusCounts,
      // From just before the flood's first creation to the last pipeline's finished_at.
      seconds: seconds(elapsedMs),
      floodCreatedSeconds,
      stagesPerSecond: +(stages / (elapsedMs / 1000)).toFixed(1),
      backlogStagesPerSecond: backlogPerSecond === null ? null : +backlogPerSecond.toFixed(1),
      floodBacklogAtSmallArrival,
      waitMs: {
        small: waitsOf(ran, isSmall, wait),
        flood: waitsOf(ran, (r) => !isSmall(r), wait),
        perSmallKey: perKey,
      },
      fifoSimulatedWaitMs: {
        holdMs: +holdMs.toFixed(1), // one server's time per stage: CAPACITY / backlogStagesPerSecond
        small: waitsOf(rows, isSmall, fifoWait),
        flood: waitsOf(rows, (r) => !isSmall(r), fifoWait),
      },
      turns,
      slot,
      // Other work on the box during the run, in cores (2 = both cores busy all along).
      otherCores:
        box0 === null || box1 === null
          ? null
          : +((box1 - box0 - oursCpu) / ((boxAt1 - boxAt0) / 1000)).toFixed(2),
      cpuMsPerStage: {
        services: perStage(services, stages),
        // The backends of the run's database (the PostgreSQL server is shared with the box).
        postgres: perStage(ownBackends.cpuSeconds, stages),
        // The same by the backends' application_name (each service names its pools), else type.
        postgresByOwner: Object.fromEntries(
          Object.entries(ownBackends.byOwner).map(([n, cpu]) => [n, perStage(cpu, stages)]),
        ),
        // The whole PostgreSQL server, other databases' backends included.
        postgresServer: perStage(usage.postgresCpuSeconds, stages),
        redis: perStage(usage.redisCpuSeconds, stages),
        servicesPostgresRedis: perStage(engineCpu, stages),
        workers: perStage(sum(Object.keys(workers.pids)), stages),
        bench: perStage(processes.bench?.cpuSeconds ?? null, stages),
        byService: Object.fromEntries(
          serviceNames.map((n) => [n, perStage(processes[n]?.cpuSeconds ?? null, stages)]),
        ),
      },
      postgres: {
        statementsPerStage: pgFigures.statementsPerUnit,
        transactionsPerStage: pgFigures.transactionsPerUnit,
        execMsPerStage: pgFigures.execMsPerUnit,
        topStatementsFile: pgFigures.topStatementsFile,
      },
      redisCommandsPerStage:
        usage.redisCommands === null ? null : +(usage.redisCommands / stages).toFixed(2),
      redisCommandStatsPerStage: commandStatsPerUnit(cmdStats0, cmdStats1, stages),
    };
    log(JSON.stringify(line));
    return line;
  } finally {
    workers?.kill();
    await db?.end().catch(() => {});
    await redis?.quit();
    await cluster?.stop();
    await ownRedis.stop();
  }
}

/** BENCH_FAIRNESS_PAIRS pairs of runs, keyed then plain, and a summary line. */
export async function benchFairness(log = console.log) {
  const pairs = [];
  for (let i = 1; i <= PAIRS; i++) {
    const keyed = await runOnce('keyed', i, log);
    const keyed16 = SAME_FLEET ? await runOnce('keyed16', i, log) : null;
    const plain = await runOnce('plain', i, log);
    const fleet = FLEET ? await runOnce('fleet', i, log) : null;
    pairs.push({ keyed, keyed16, plain, fleet });
  }
  const ratio = (a, b) => (a === null || b === null || b === 0 ? null : +(a / b).toFixed(3));
  const first = pairs[0];
  const pick = (w) => ({ p50: w.p50, p99: w.p99 });
  log(
    JSON.stringify({
      bench: 'fairness.summary',
      flood: FLOOD,
      smallKeys: SMALL_KEYS,
      perSmallKey: SMALL,
      capacity: CAPACITY,
      handlerMs: HANDLER_MS,
      // The first keyed run; the others are in their own lines.
      waitMs: {
        small: pick(first.keyed.waitMs.small),
        flood: pick(first.keyed.waitMs.flood),
        smallWorstKeyP99: Math.max(
          ...Object.values(first.keyed.waitMs.perSmallKey).map((k) => k.p99),
        ),
      },
      fifoSimulatedWaitMs: {
        small: pick(first.keyed.fifoSimulatedWaitMs.small),
        flood: pick(first.keyed.fifoSimulatedWaitMs.flood),
      },
      // The plain run of the same pair: no keys, FIFO in the StageNext queue.
      fifoMeasuredWaitMs: {
        small: pick(first.plain.waitMs.small),
        flood: pick(first.plain.waitMs.flood),
      },
      turns: first.keyed.turns,
      seconds: {
        keyed: pairs.map((p) => p.keyed.seconds),
        plain: pairs.map((p) => p.plain.seconds),
      },
      cost: pairs.map((p, i) => ({
        pair: i + 1,
        boxCalibrationMs: { keyed: p.keyed.boxCalibrationMs, plain: p.plain.boxCalibrationMs },
        cpuMsPerStage: {
          keyed: p.keyed.cpuMsPerStage.servicesPostgresRedis,
          plain: p.plain.cpuMsPerStage.servicesPostgresRedis,
        },
        ratio: ratio(
          p.keyed.cpuMsPerStage.servicesPostgresRedis,
          p.plain.cpuMsPerStage.servicesPostgresRedis,
        ),
        servicesOnlyRatio: ratio(p.keyed.cpuMsPerStage.services, p.plain.cpuMsPerStage.services),
        // The keys and the limit on plain's own fleet (16 slots): the same bench without them.
        ...(p.keyed16
          ? {
              sameFleetCpuMsPerStage: p.keyed16.cpuMsPerStage.servicesPostgresRedis,
              sameFleetRatio: ratio(
                p.keyed16.cpuMsPerStage.servicesPostgresRedis,
                p.plain.cpuMsPerStage.servicesPostgresRedis,
              ),
            }
          : {}),
        // Against the same fleet (32 slots) unbound: twice the rate, for context only.
        ...(p.fleet
          ? {
              fleetCpuMsPerStage: p.fleet.cpuMsPerStage.servicesPostgresRedis,
              fleetRatio: ratio(
                p.keyed.cpuMsPerStage.servicesPostgresRedis,
                p.fleet.cpuMsPerStage.servicesPostgresRedis,
              ),
            }
          : {}),
      })),
    }),
  );
  return pairs;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchFairness();
