// `npm run bench` (engine part). Not a test: it asserts nothing, it measures. Each phase runs on
// a fresh cluster (the five services as processes, configured as in production: log level info,
// tracing off, stdout to a log file) and prints one JSON line, then an engine.resources line.
//
//   saturation  BENCH_PIPELINES pipelines of BENCH_STAGES stages (handler `work`, instant) created
//               by 8 concurrent creators, run by two SDK worker processes (BENCH_SLOTS slots in
//               all); throughput = stages / (last pipelines.finished_at − just before the first
//               create). Also the per-stage latencies (queueing dominates them here) and
//               PostgreSQL's statements and transactions per stage.
//   latency     pipelines created open loop so that BENCH_LATENCY_RATE stages/s are offered, for
//               BENCH_LATENCY_SECONDS, with the same waiting slots: p50/p90/p99/max of ready →
//               published, ready → pulled, result 202 → next pulled, and the breakdown.
//   create      idempotent creations open loop at BENCH_CREATE_RATE/s for BENCH_CREATE_SECONDS,
//               no workers: client-side latency (request start → response read), non-2xx count.
//
// Each phase's line carries boxCalibrationMs: a fixed piece of work timed on the bench's Node just
// before the phase (box.mjs); the machine's speed drifts, so compare figures of alike calibration.
//
// Environment (defaults in brackets):
//   BENCH_PHASES           comma list of saturation,latency,create [all three]
//   BENCH_PIPELINES        saturation pipelines [2000]
//   BENCH_STAGES           stages per pipeline, every phase [5]
//   BENCH_SLOTS            worker slots, split over the two worker processes [32]
//   BENCH_LATENCY_RATE     offered stages per second in the latency phase [20% of the saturation
//                          phase's figure when that phase ran first, else 120]
//   BENCH_LATENCY_SECONDS  length of the latency phase's offered load [20]
//   BENCH_CREATE_RATE      creations per second in the create phase [50]
//   BENCH_CREATE_SECONDS   length of the create phase [10]
//   BENCH_WARMUP_PIPELINES pipelines run through the same cluster before each phase's clock starts,
//                          and left out of every figure [1000; 0: measure cold processes]
//   BENCH_NODE             image | current | a node binary: the Node of the services and workers
//                          [image: the deployed image's Node 24; e2e/bench/runtime.mjs]
//   BENCH_HISTORY          finished pipelines preloaded in every phase's database [0]; built
//                          once into a template database kept for later runs (history.mjs)
//   BENCH_HISTORY_DROP     1: drop cached history templates first
//   BENCH_REPORT_DIR       where the top-statements files go [a new temporary directory, printed]
//   BENCH_LOG_DIR          keep each service's log there as <phase>-<service>.log [temporary, removed]
//   BENCH_CPU_PROF         directory: --cpu-prof for every service and worker process, one
//                          <phase>-<process>.cpuprofile each
//   BENCH_TRACING          1: every phase twice, tracing off then on (spans to JSON-lines files),
//                          and an engine-tracing-overhead line
//   BENCH_POOLER           direct | pgbouncer | both [direct]: the services reach PostgreSQL
//                          directly, or through a PgBouncer 1.18 in transaction mode of the bench's
//                          own (pgbouncer=true, decision 0116); both: each phase directly, then
//                          through PgBouncer, and an engine-pooler-comparison line
//   BENCH_STALL_SECONDS    give up when no pipeline finishes for this long [120]
//   BENCH_ONLY             (run.mjs) engine or schedules; the schedules part reads
//                          BENCH_SCHEDULES and BENCH_SCHEDULE_LEAD_SECONDS (schedules.mjs)
//   TEST_DATABASE_URL      admin connection [postgresql://postgres@127.0.0.1:5432/postgres]
//   REDIS_URL              [redis://127.0.0.1:6379]
//   BENCH_REDIS            single | cluster [single]: cluster runs every phase on a Redis Cluster of
//                          the bench's own (BENCH_REDIS_MASTERS primaries [3], no replicas; the
//                          services get REDIS_CLUSTER_NODES) and reports each primary's commands
//                          and CPU per stage (redisPerNode in the resources line)
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { REDIS_URL, startBenchCluster, summarize } from './cluster.mjs';
import { startBenchRedisCluster } from './redis-cluster.mjs';
import { dropHistoryTemplates, ensureHistoryTemplate } from './history.mjs';
import { answerCounts, createClosedLoop, createOpenLoop } from './load.mjs';
import { benchDb, startPgWork } from './pgwork.mjs';
import { postmasterOf, startResourceMeter } from './resources.mjs';
import { stageLatencies, waitAllTerminal, waitFirstDispatch } from './stages.mjs';
import { benchNode } from './runtime.mjs';
import { boxCalibrationMs } from './box.mjs';
import { startWorkerProcesses } from './workers.mjs';

const num = (name, fallback) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
};
const PIPELINES = num('BENCH_PIPELINES', 2000);
const STAGES = num('BENCH_STAGES', 5);
const SLOTS = num('BENCH_SLOTS', 32);
// The latency phase offers a fixed load well under saturation, so waiting for a free worker slot
// does not hide the engine's own latency: a fifth of what this run's saturation phase reached.
let measuredSaturation = null;
const latencyRate = () =>
  process.env.BENCH_LATENCY_RATE !== undefined
    ? num('BENCH_LATENCY_RATE', 120)
    : measuredSaturation !== null
      ? Math.max(5, Math.round(measuredSaturation * 0.2))
      : 120;
const LATENCY_SECONDS = num('BENCH_LATENCY_SECONDS', 20);
const CREATE_RATE = num('BENCH_CREATE_RATE', 50);
const CREATE_SECONDS = num('BENCH_CREATE_SECONDS', 10);
const HISTORY = num('BENCH_HISTORY', 0);
const WARMUP = num('BENCH_WARMUP_PIPELINES', 1000);
const CREATORS = 8;
const POOLERS = { direct: ['direct'], pgbouncer: ['pgbouncer'], both: ['direct', 'pgbouncer'] }[
  process.env.BENCH_POOLER ?? 'direct'
];
if (!POOLERS) throw new Error('BENCH_POOLER must be direct, pgbouncer or both');
const ALL_PHASES = ['saturation', 'latency', 'create'];
const PHASES = (process.env.BENCH_PHASES ?? ALL_PHASES.join(','))
  .split(',')
  .map((p) => p.trim())
  .filter(Boolean);
const unknownPhases = PHASES.filter((p) => !ALL_PHASES.includes(p));
if (unknownPhases.length > 0)
  throw new Error(
    `BENCH_PHASES: unknown phase(s) ${unknownPhases.join(', ')} (known: ${ALL_PHASES.join(', ')})`,
  );

let reportDir;
function reportFile(name) {
  if (!reportDir) {
    reportDir = process.env.BENCH_REPORT_DIR ?? mkdtempSync(join(tmpdir(), 'po-bench-report-'));
    mkdirSync(reportDir, { recursive: true });
    console.error(`bench: reports in ${reportDir}`);
  }
  return join(reportDir, name);
}

const perUnit = (v, units, digits = 2) =>
  v === null || units <= 0 ? null : +(v / units).toFixed(digits);
const seconds = (ms) => +(ms / 1000).toFixed(2);

/** The load of each phase: resolves with { startedAt (epoch ms), ids, ... } once it was offered. */
const drivers = {
  async saturation(cluster) {
    const startedAt = Date.now(); // just before the first create request
    const answers = await createClosedLoop(cluster, {
      count: PIPELINES,
      creators: CREATORS,
      stages: STAGES,
      prefix: 'sat',
    });
    return { startedAt, answers, createSeconds: seconds(Date.now() - startedAt) };
  },
  async latency(cluster) {
    const startedAt = Date.now();
    const { answers, lagMs, lastSentAt } = await createOpenLoop(cluster, {
      perSecond: latencyRate() / STAGES,
      seconds: LATENCY_SECONDS,
      stages: STAGES,
      prefix: 'lat',
    });
    return { startedAt, answers, lagMs, lastSentAt };
  },
  async create(cluster) {
    const startedAt = Date.now();
    const { answers, lagMs } = await createOpenLoop(cluster, {
      perSecond: CREATE_RATE,
      seconds: CREATE_SECONDS,
      stages: STAGES,
      prefix: 'create',
    });
    return { startedAt, answers, lagMs };
  },
};

/**
 * Before a phase's clock starts, WARMUP pipelines go through the cluster it measures (created
 * closed loop and, with workers, run to their end): the processes were just started, and for their
 * first ~10 s V8 is still compiling the hot paths (a fifth of their CPU, seen with perf) — a cost a
 * long-running deployment does not pay per stage. Decision 0104; BENCH_WARMUP_PIPELINES=0 measures
 * cold processes.
 */
async function warmUp(cluster, db, withWorkers) {
  if (WARMUP === 0) return null;
  const t0 = Date.now();
  const answers = await createClosedLoop(cluster, {
    count: WARMUP,
    creators: CREATORS,
    stages: STAGES,
    prefix: 'warm',
  });
  const ids = answers.filter((a) => a.id !== null).map((a) => a.id);
  if (ids.length < answers.length)
    throw new Error(`warm-up: ${answers.length - ids.length} creations failed`);
  if (withWorkers) await waitAllTerminal(cluster, db, ids);
  return { pipelines: ids.length, seconds: seconds(Date.now() - t0) };
}

async function runPhase(phase, { tracing, template, log, pooler = 'direct', redisCluster }) {
  const label = `${tracing ? `${phase}-tracing` : phase}${pooler === 'direct' ? '' : `-${pooler}`}`;
  const spanDir = tracing ? mkdtempSync(join(tmpdir(), 'po-bench-spans-')) : undefined;
  const otel = tracing
    ? {
        OTEL_TRACES_EXPORTER: 'file',
        OTEL_FILE_EXPORTER_PATH: join(spanDir, '{service}-{pid}.jsonl'),
      }
    : {};
  const boxMs = boxCalibrationMs(); // before anything of the phase runs
  const cluster = await startBenchCluster({ env: otel, label, template, pooler, redisClusterNodes: redisCluster?.seeds });
  const redis = redisCluster ? redisCluster.ports.map((port) => new Redis({ host: '127.0.0.1', port })) : new Redis(REDIS_URL);
  let workers;
  let db;
  try {
    db = await benchDb(cluster.directUrl);
    if (phase !== 'create')
      workers = await startWorkerProcesses({ cluster, slots: SLOTS, tracing, env: otel, label });
    const warm = await warmUp(cluster, db, phase !== 'create');
    const meter = await startResourceMeter({
      processes: {
        ...cluster.pids,
        ...workers?.pids,
        bench: process.pid,
        ...(cluster.poolerPid ? { pgbouncer: cluster.poolerPid } : {}),
      },
      postmasterPid: postmasterOf(db.backendPid),
      redis,
    });
    const pgWork = await startPgWork(db, cluster.databaseName);

    const run = await drivers[phase](cluster);
    const ids = run.answers.filter((a) => a.id !== null).map((a) => a.id);
    const created = answerCounts(run.answers);
    if (created.firstError)
      console.error(
        `bench: ${phase}: ${created.non2xx} creations failed, first: ${created.firstError}`,
      );
    // Saturation and latency end at the last terminal state; create once the answers are read
    // (then the dispatcher is let catch up, so its work is in the PostgreSQL figures).
    const end =
      phase === 'create' ? { endMs: Date.now() } : await waitAllTerminal(cluster, db, ids);
    const usage = await meter.end(); // before anything stops: RSS, and CPU over the phase
    const dispatchSettledSeconds =
      phase === 'create' && ids.length > 0 ? await waitFirstDispatch(db, ids) : undefined;
    const times = workers ? await workers.stop() : null;
    const stops = await cluster.stopServices();
    const units = phase === 'create' ? ids.length : ids.length * STAGES;
    const pgFigures = await pgWork.finish({
      url: cluster.directUrl,
      units,
      reportFile: reportFile(`${label}-top-statements.txt`),
    });
    db = await benchDb(cluster.directUrl);
    const latencies = times ? await stageLatencies(db, ids, times) : null;

    const unitName = phase === 'create' ? 'Pipeline' : 'Stage';
    const postgres = {
      [`statementsPer${unitName}`]: pgFigures.statementsPerUnit,
      [`beginCommitPer${unitName}`]: pgFigures.transactionControlPerUnit, // included in statementsPer…
      [`transactionsPer${unitName}`]: pgFigures.transactionsPerUnit,
      [`execMsPer${unitName}`]: pgFigures.execMsPerUnit,
      // Plans made (pg_stat_statements.track_planning on): named statements are planned once per
      // server connection, directly or behind PgBouncer (decisions 0101, 0116).
      [`plansPer${unitName}`]: pgFigures.plansPerUnit,
      [`planMsPer${unitName}`]: pgFigures.planMsPerUnit,
      topStatementsFile: pgFigures.topStatementsFile,
    };
    const elapsedMs = end.endMs - run.startedAt;
    const common = {
      pooler,
      node: benchNode().version,
      tracing,
      history: HISTORY,
      stagesPerPipeline: STAGES,
      warmUp: warm,
      boxCalibrationMs: boxMs,
    };
    let line;
    if (phase === 'saturation') {
      line = {
        ...common,
        pipelines: PIPELINES,
        workerSlots: SLOTS,
        created: ids.length,
        createNon2xx: created.non2xx,
        completed: end.completed,
        statusCounts: end.statusCounts,
        seconds: seconds(elapsedMs),
        stagesPerSecond: +(units / (elapsedMs / 1000)).toFixed(1),
        createSeconds: run.createSeconds,
        createLatencyMs: summarize(run.answers.map((a) => a.ms)),
        ...latencies,
        postgres,
      };
      if (!tracing && pooler === POOLERS[0]) measuredSaturation = line.stagesPerSecond;
    } else if (phase === 'latency') {
      line = {
        ...common,
        offeredStagesPerSecond: latencyRate(),
        pipelinesPerSecond: +(latencyRate() / STAGES).toFixed(2),
        offeredSeconds: LATENCY_SECONDS,
        workerSlots: SLOTS,
        created: ids.length,
        createNon2xx: created.non2xx,
        completed: end.completed,
        statusCounts: end.statusCounts,
        // From just before the first creation to the last terminal state; drain: after the last one was sent.
        seconds: seconds(elapsedMs),
        drainSeconds: seconds(end.endMs - run.lastSentAt),
        achievedStagesPerSecond: +(units / (elapsedMs / 1000)).toFixed(1),
        generatorLagMs: { p99: summarize(run.lagMs).p99, max: summarize(run.lagMs).max },
        createLatencyMs: summarize(run.answers.map((a) => a.ms)),
        ...latencies,
        postgres,
      };
    } else {
      line = {
        ...common,
        ratePerSecond: CREATE_RATE,
        offeredSeconds: CREATE_SECONDS,
        requests: run.answers.length,
        non2xx: created.non2xx,
        statusCounts: created.statusCounts,
        seconds: seconds(elapsedMs),
        latencyMs: summarize(run.answers.map((a) => a.ms)),
        generatorLagMs: { p99: summarize(run.lagMs).p99, max: summarize(run.lagMs).max },
        dispatchSettledSeconds,
        postgres,
      };
    }
    if (template) line.historyCloneSeconds = cluster.cloneSeconds;
    if (times) line.workers = times.stats;

    const processes = {};
    for (const [name, u] of Object.entries(usage.processes))
      processes[name] = { ...u, ...(stops[name] ?? {}) };
    const serviceNames = Object.keys(stops);
    const sumOf = (names, key) => names.reduce((s, n) => s + (processes[n]?.[key] ?? 0), 0);
    const resources = {
      phase: label,
      pooler,
      history: HISTORY,
      seconds: seconds(elapsedMs),
      units: `${units} ${unitName.toLowerCase()}s`,
      processes,
      postgresCpuSeconds: usage.postgresCpuSeconds,
      redisCpuSeconds: usage.redisCpuSeconds,
      cpuMsPerUnit: {
        services: perUnit(sumOf(serviceNames, 'cpuSeconds') * 1000, units),
        workers: workers
          ? perUnit(sumOf(Object.keys(workers.pids), 'cpuSeconds') * 1000, units)
          : null,
        bench: perUnit((processes.bench?.cpuSeconds ?? 0) * 1000, units),
        pgbouncer: processes.pgbouncer ? perUnit(processes.pgbouncer.cpuSeconds * 1000, units) : null,
        postgres: perUnit(
          usage.postgresCpuSeconds === null ? null : usage.postgresCpuSeconds * 1000,
          units,
        ),
        redis: perUnit(usage.redisCpuSeconds === null ? null : usage.redisCpuSeconds * 1000, units),
      },
      logLinesPerUnit: perUnit(sumOf(serviceNames, 'logLines'), units),
      // Every message between processes is at least one write(2): the round trips, counted.
      writesPerUnit: Object.fromEntries(
        Object.entries(processes).map(([name, u]) => [name, perUnit(u.writes, units, 2)]),
      ),
      redisCommandsPerUnit: perUnit(usage.redisCommands, units, 2),
      ...(usage.redisPerNode
        ? {
            redisPerNode: usage.redisPerNode.map((n) => ({
              node: n.node,
              commandsPerUnit: perUnit(n.commands, units, 2),
              cpuMsPerUnit: perUnit(n.cpuSeconds === null ? null : n.cpuSeconds * 1000, units, 3),
            })),
          }
        : {}),
    };
    if (spanDir) {
      // Every process flushed its spans when it stopped: count what was exported.
      const files = readdirSync(spanDir);
      line.spansExported = files.reduce(
        (n, f) => n + readFileSync(join(spanDir, f), 'utf8').split('\n').filter(Boolean).length,
        0,
      );
      line.spansPerUnit = perUnit(line.spansExported, units, 1);
    }
    log(JSON.stringify({ bench: `engine.${phase}`, ...line }));
    log(JSON.stringify({ bench: 'engine.resources', ...resources }));
    return line;
  } finally {
    workers?.kill();
    await db?.end().catch(() => {});
    await Promise.all([redis].flat().map((r) => r.quit()));
    await cluster.stop();
    if (spanDir) rmSync(spanDir, { recursive: true, force: true });
  }
}

/** Every phase of BENCH_PHASES, in order; resolves with phase → its figures. */
export async function benchEngine(log = console.log, { tracing = false } = {}) {
  let template;
  if (process.env.BENCH_HISTORY_DROP === '1') {
    const dropped = await dropHistoryTemplates();
    console.error(
      `bench: dropped ${dropped.length} history template(s)${dropped.length ? `: ${dropped.join(', ')}` : ''}`,
    );
  }
  if (HISTORY > 0) {
    const t0 = Date.now();
    const t = await ensureHistoryTemplate(HISTORY, STAGES);
    template = { name: t.name, applicationId: t.applicationId };
    log(
      JSON.stringify({
        bench: 'engine.history',
        pipelines: HISTORY,
        stagesPerPipeline: STAGES,
        template: t.name,
        cached: t.cached,
        // How long the template took to build (when it was built, if cached), and this run's wait.
        seedSeconds: t.seedSeconds,
        builtAt: t.builtAt,
        readySeconds: seconds(Date.now() - t0),
      }),
    );
  }
  const results = {};
  const redisCluster =
    process.env.BENCH_REDIS === 'cluster' ? await startBenchRedisCluster(num('BENCH_REDIS_MASTERS', 3)) : undefined;
  try {
    for (const phase of ALL_PHASES.filter((p) => PHASES.includes(p))) {
      for (const pooler of POOLERS) {
        const line = await runPhase(phase, { tracing, template, log, pooler, redisCluster });
        if (pooler === POOLERS[0]) results[phase] = line;
        else (results.pooled ??= {})[phase] = line;
      }
    }
  } finally {
    await redisCluster?.stop();
  }
  if (results.pooled?.saturation && results.saturation) {
    const direct = results.saturation.stagesPerSecond;
    const pooled = results.pooled.saturation.stagesPerSecond;
    log(
      JSON.stringify({
        bench: 'engine-pooler-comparison',
        stagesPerSecondDirect: direct,
        stagesPerSecondPgBouncer: pooled,
        changePercent: direct ? +(((pooled - direct) / direct) * 100).toFixed(1) : null,
      }),
    );
  }
  return results;
}

/** BENCH_TRACING=1: the engine bench with tracing off, then on, and the cost of tracing. */
export async function benchEngineTracing(log = console.log) {
  const off = await benchEngine(log, { tracing: false });
  const on = await benchEngine(log, { tracing: true });
  const change = (a, b) => (a && b ? +(((b - a) / a) * 100).toFixed(1) : null);
  log(
    JSON.stringify({
      bench: 'engine-tracing-overhead',
      stagesPerSecondOff: off.saturation?.stagesPerSecond ?? null,
      stagesPerSecondOn: on.saturation?.stagesPerSecond ?? null,
      throughputChangePercent: change(
        off.saturation?.stagesPerSecond,
        on.saturation?.stagesPerSecond,
      ),
      readyToPulledP50Ms: {
        off: (off.latency ?? off.saturation)?.latencyMs.readyToPulled.p50 ?? null,
        on: (on.latency ?? on.saturation)?.latencyMs.readyToPulled.p50 ?? null,
      },
      createP50Ms: { off: off.create?.latencyMs.p50 ?? null, on: on.create?.latencyMs.p50 ?? null },
      spansExported: Object.fromEntries(Object.entries(on).map(([p, r]) => [p, r.spansExported])),
    }),
  );
  return { off, on };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.env.BENCH_TRACING === '1') await benchEngineTracing();
  else await benchEngine();
}
