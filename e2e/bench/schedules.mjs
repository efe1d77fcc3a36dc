// `npm run bench` (schedules part). Not a test: it asserts nothing, it measures. Each phase runs on
// a fresh cluster (the five services as processes, configured as in production, cluster.mjs) and
// prints one JSON line, `schedules.<phase>`.
//
//   burst     BENCH_SCHEDULES Once schedules (no jitter) all due at the same whole second,
//             BENCH_SCHEDULE_LEAD_SECONDS ahead so every PUT is answered before it.
//   steady    BENCH_STEADY_SCHEDULES active schedules created through PUT /schedules/{name}
//             (concurrent creators): Interval (periods 10, 15, 20, 30, 60, 120 s), Cron (`* * * * *`,
//             `*/2 * * * *`, `*/5 * * * *` in UTC, Europe/Berlin, America/New_York, Asia/Kolkata) and
//             Once (runAt spread over the window, created last), shares BENCH_STEADY_MIX, about
//             half with jitterSeconds 1..30, overlap Allow; measured for BENCH_STEADY_SECONDS once
//             all are created. The expected ticks (fire time in [start, end − margin]) come from
//             the stored plans (schedules.plan_anchor, read after the creations) with @po/domain's
//             nextTick and jitteredFireAt; then it waits (BENCH_STEADY_DRAIN_SECONDS at most) until
//             each has a run, and compares: misses (no Scheduled run, or a Catchup one), doubles
//             (a tick with two runs, a pipeline of a schedule that no run names or that two runs
//             name), extras (Scheduled runs in the window for ticks not expected).
//   burst-2, steady-2   the same with two scheduler-service processes.
//
// Lag is measured from each tick's fire time (scheduled_for + its jitter offset, addendum §14.4) to
// the moment its pipeline was first visible to a reader: a child process with its own connection
// polling `pipelines` every BENCH_READER_POLL_MS (schedules-reader.mjs), so the lag ends at the
// commit, not at the stamp. The stamped lag (pipelines.created_at − fire time) is reported beside
// it, and the reader's resolution (poll period, round trip, width of the visibility interval).
// Each phase also reports the scheduler processes' CPU seconds and RSS (start, sampled peak, end,
// process peak), PostgreSQL's CPU with and without the reader's backend, Redis's CPU, the other
// processes' CPU, and the scheduler logs' warnings and errors. The resources cover the measured
// window: a second before runAt to the last pipeline (burst), the BENCH_STEADY_SECONDS (steady).
//
// Environment (defaults in brackets):
//   BENCH_SCHEDULE_PHASES        comma list of burst, steady, burst-2, steady-2 [all four]
//   BENCH_SCHEDULES              burst: Once schedules due in the same second [1000]
//   BENCH_SCHEDULE_LEAD_SECONDS  burst: how far ahead the common runAt is placed; the PUTs must be
//                                answered before it (1,000 took 14 s on the 2-core box) [30]
//   BENCH_BURST_WAIT_SECONDS     burst: stop waiting this long after runAt [120]
//   BENCH_STEADY_SCHEDULES       steady: schedules [10000]
//   BENCH_STEADY_SECONDS         steady: measured window [60]
//   BENCH_STEADY_WARMUP_SECONDS  steady: wait between the last creation and the window [0]
//   BENCH_STEADY_MIX             steady: Interval,Cron,Once shares [40,40,20]
//   BENCH_STEADY_JITTER_SHARE    steady: share of schedules with jitter [0.5]
//   BENCH_STEADY_JITTER_MAX      steady: their jitterSeconds are 1..this [30]
//   BENCH_STEADY_MARGIN_SECONDS  steady: ticks firing in the window's last seconds are not counted [5]
//   BENCH_STEADY_DRAIN_SECONDS   steady: longest wait after the window for the expected ticks' runs [90]
//   BENCH_STEADY_CREATE_SECONDS  steady: stop creating schedules after this long [600]
//   BENCH_STEADY_SEED            steady: seed of the mix [11]
//   BENCH_SCHEDULE_CREATORS      concurrent PUTs [16]
//   BENCH_READER_POLL_MS         visibility reader: from one poll's start to the next [2]
//   BENCH_LOG_DIR, BENCH_CPU_PROF, TEST_DATABASE_URL, REDIS_URL: as in engine.mjs (cluster.mjs)
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { REDIS_URL, startBenchCluster } from './cluster.mjs';
import { postmasterOf } from './resources.mjs';
import { burstFigures, runBurst } from './schedules-burst.mjs';
import {
  SCHEDULER,
  readerFigures,
  schedulerLogCounts,
  seconds,
  startWindowMeter,
} from './schedules-common.mjs';
import { startVisibilityReader } from './schedules-reader.mjs';
import { runSteady, steadyFigures } from './schedules-steady.mjs';

const num = (name, fallback) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
};
const ALL_PHASES = ['burst', 'steady', 'burst-2', 'steady-2'];
const PHASES = (process.env.BENCH_SCHEDULE_PHASES ?? ALL_PHASES.join(','))
  .split(',')
  .map((p) => p.trim())
  .filter(Boolean);
const unknownPhases = PHASES.filter((p) => !ALL_PHASES.includes(p));
if (unknownPhases.length > 0)
  throw new Error(
    `BENCH_SCHEDULE_PHASES: unknown phase(s) ${unknownPhases.join(', ')} (known: ${ALL_PHASES.join(', ')})`,
  );
const BURST = {
  schedules: num('BENCH_SCHEDULES', 1000),
  leadSeconds: num('BENCH_SCHEDULE_LEAD_SECONDS', 30),
  waitSeconds: num('BENCH_BURST_WAIT_SECONDS', 120),
  creators: Math.max(1, num('BENCH_SCHEDULE_CREATORS', 16)),
};
const mix = (process.env.BENCH_STEADY_MIX ?? '40,40,20').split(',').map(Number);
if (
  mix.length !== 3 ||
  mix.some((v) => !Number.isFinite(v) || v < 0) ||
  mix[0] + mix[1] + mix[2] <= 0
)
  throw new Error('BENCH_STEADY_MIX must be three non-negative shares: Interval,Cron,Once');
const STEADY = {
  schedules: num('BENCH_STEADY_SCHEDULES', 10_000),
  seconds: num('BENCH_STEADY_SECONDS', 60),
  warmupSeconds: num('BENCH_STEADY_WARMUP_SECONDS', 0),
  mix,
  jitterShare: num('BENCH_STEADY_JITTER_SHARE', 0.5),
  jitterMax: Math.max(1, num('BENCH_STEADY_JITTER_MAX', 30)),
  marginSeconds: num('BENCH_STEADY_MARGIN_SECONDS', 5),
  drainSeconds: num('BENCH_STEADY_DRAIN_SECONDS', 90),
  createTimeoutSeconds: num('BENCH_STEADY_CREATE_SECONDS', 600),
  seed: num('BENCH_STEADY_SEED', 11),
  onceLeadSeconds: 5,
  creators: BURST.creators,
};
const READER_POLL_MS = num('BENCH_READER_POLL_MS', 2);

/** The longest a phase may take before the bench gives up on it (and exits). */
const phaseTimeoutMs = (kind) =>
  (kind === 'burst'
    ? BURST.leadSeconds + BURST.waitSeconds + 240
    : STEADY.createTimeoutSeconds +
      STEADY.warmupSeconds +
      STEADY.seconds +
      STEADY.drainSeconds +
      300) * 1000;

async function runPhase(phase, log) {
  const replicas = phase.endsWith('-2') ? 2 : 1;
  const kind = phase.replace(/-2$/, '');
  const started = Date.now();
  const watchdog = setTimeout(() => {
    console.error(
      `bench: schedules ${phase}: no result after ${phaseTimeoutMs(kind) / 1000} s; giving up`,
    );
    process.exit(1); // the 'exit' handlers kill the services and the reader
  }, phaseTimeoutMs(kind));
  const cluster = await startBenchCluster({
    label: `schedules-${phase}`,
    replicas: { [SCHEDULER]: replicas },
  });
  const redis = new Redis(REDIS_URL);
  const db = new pg.Client({
    connectionString: cluster.env.DATABASE_URL,
    application_name: 'po-bench',
  });
  let reader;
  try {
    await db.connect();
    const backendPid = (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const ctx = {
      cluster,
      db,
      async startReader() {
        reader = await startVisibilityReader(cluster.env.DATABASE_URL, { pollMs: READER_POLL_MS });
        return reader;
      },
      startMeter: () =>
        startWindowMeter({ cluster, reader, postmasterPid: postmasterOf(backendPid), redis }),
    };
    console.error(`bench: schedules ${phase}: ${replicas} scheduler replica(s)`);
    const run = kind === 'burst' ? await runBurst(ctx, BURST) : await runSteady(ctx, STEADY);
    const serviceFailure = cluster.failure();
    const seen = await reader.stop();
    reader = null;
    await cluster.stopServices();
    const figures =
      kind === 'burst'
        ? await burstFigures(db, seen.seen, run)
        : await steadyFigures(db, seen.seen, run, STEADY);
    const line = {
      bench: `schedules.${phase}`,
      schedulerReplicas: replicas,
      ...figures,
      reader: readerFigures(READER_POLL_MS, seen),
      resources: run.usage,
      schedulerLogs: await schedulerLogCounts(cluster),
      serviceFailure,
      phaseSeconds: seconds(Date.now() - started),
    };
    log(JSON.stringify(line));
    return line;
  } finally {
    clearTimeout(watchdog);
    reader?.kill();
    await db.end().catch(() => {});
    await redis.quit();
    await cluster.stop();
  }
}

/** Every phase of BENCH_SCHEDULE_PHASES, in order; resolves with phase → its figures. */
export async function benchSchedules(log = console.log) {
  const results = {};
  for (const phase of PHASES) {
    results[phase] = await runPhase(phase, log);
    await sleep(1000); // let the box settle between clusters
  }
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSchedules();
