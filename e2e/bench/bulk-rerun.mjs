// BENCH_ONLY=bulk-rerun (issue 32, decision 0133): an incident's redrive. Not a test: it asserts
// nothing, it measures.
//
// BENCH_BULK_PIPELINES Failed pipelines of two stages (the first Completed, the second Failed, as
// a downstream outage leaves them) are written straight into the bench's database, one statement
// (the engine would take minutes to fail them one by one, and how they failed is not what is
// measured). Two worker processes serve handler `work`. Other traffic runs throughout: an open
// loop of BENCH_BULK_OTHER_PER_SECOND one-stage pipelines. After BENCH_BULK_BASELINE_SECONDS of
// it alone, `POST /pipelines/bulk-rerun {"filter":{"status":["Failed"],"name":"bulk-"},
// "from":"failed","maxPerSecond":BENCH_BULK_RATE}` starts the redrive; `GET /operations/{id}`
// is read every second until it ends. Reported: the operation's achieved rate (items done per
// second between its first and last progress), how long it took, the reruns completed, and the
// other traffic's created → completed latency (p50/p99) alone and while the operation ran, and by
// 5-second slices of the operation (where the tail comes from).
//
// Environment (defaults in brackets):
//   BENCH_BULK_PIPELINES          failed pipelines to rerun [10000]
//   BENCH_BULK_RATE               the operation's maxPerSecond [500]
//   BENCH_BULK_OTHER_PER_SECOND   other traffic, one-stage pipelines per second [50]
//   BENCH_BULK_BASELINE_SECONDS   other traffic alone before the operation [15]
//   BENCH_BULK_TIMEOUT_SECONDS    give up on the operation after this long [300]
//   BENCH_NODE, BENCH_LOG_DIR, TEST_DATABASE_URL as in engine.mjs.
import { setTimeout as sleep } from 'node:timers/promises';
import { startBenchCluster, summarize } from './cluster.mjs';
import { answerCounts, createOpenLoop } from './load.mjs';
import { benchDb } from './pgwork.mjs';
import { boxCalibrationMs } from './box.mjs';
import { startWorkerProcesses } from './workers.mjs';

const num = (name, fallback) => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const PIPELINES = num('BENCH_BULK_PIPELINES', 10_000);
const RATE = num('BENCH_BULK_RATE', 500);
const OTHER_PER_SECOND = num('BENCH_BULK_OTHER_PER_SECOND', 50);
const BASELINE_SECONDS = num('BENCH_BULK_BASELINE_SECONDS', 15);
const TIMEOUT_MS = num('BENCH_BULK_TIMEOUT_SECONDS', 300) * 1000;
const progress = (m) => console.error(`bench: bulk-rerun: ${m}`);
const seconds = (ms) => +(ms / 1000).toFixed(2);

async function api(cluster, method, path, body) {
  const res = await fetch(`${cluster.apiUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': cluster.apiKey },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * The failed pipelines, in one statement: each a `bulk-N` pipeline whose stage s0 Completed (with
 * an output) and s1 Failed, stage options copied from a pipeline the API created (the stored,
 * normalised form the engine reads).
 */
async function seedFailed(db, cluster) {
  const probe = await api(cluster, 'POST', '/pipelines/idempotent', {
    idempotencyKey: 'bulk-options-probe',
    name: 'bulk-options-probe',
    stages: [{ stageName: 's0', stageHandlerName: 'work', input: 'x' }],
  });
  const { rows } = await db.query(`SELECT options FROM stages WHERE pipeline_id = $1`, [probe.pipeline.id]);
  const options = JSON.stringify(rows[0].options);
  await db.query(
    `WITH p AS (
       INSERT INTO pipelines (application_id, name, trace_id, status, created_at, updated_at, finished_at)
       SELECT $1::int, 'bulk-' || g, md5('bulk' || g), 'Failed', now(), now(), now()
       FROM generate_series(1, $2::int) g
       RETURNING id, created_at
     )
     INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, input, options,
                         span_id, status, output, attempt, last_error_code, created_at, started_at, finished_at)
     SELECT p.id, $1::int, s.pos, 's' || s.pos, 'work', 'x' || s.pos, $3::jsonb,
            substr(md5(p.id::text || '-' || s.pos), 1, 16),
            (CASE s.pos WHEN 0 THEN 'Completed' ELSE 'Failed' END)::"StageStatus",
            CASE s.pos WHEN 0 THEN 'x0' END, 1, CASE s.pos WHEN 1 THEN 'DOWNSTREAM_DOWN' END,
            p.created_at, p.created_at, p.created_at
     FROM p CROSS JOIN (VALUES (0), (1)) AS s(pos)`,
    [cluster.applicationId, PIPELINES, options],
  );
}

/** created → finished of the other traffic's pipelines created in [from, to) (epoch ms): { created, ms }. */
async function otherRuns(db, ids, from, to) {
  const { rows } = await db.query(
    `SELECT extract(epoch FROM created_at) * 1000 AS created, extract(epoch FROM finished_at - created_at) * 1000 AS ms
     FROM pipelines WHERE id = ANY($1::bigint[]) AND status = 'Completed'`,
    [ids],
  );
  return rows.map((r) => ({ created: Number(r.created), ms: Number(r.ms) })).filter((r) => r.created >= from && r.created < to);
}

/** The runs' latencies by slices of `sliceMs` from `from`: where in the operation the tail comes from. */
function bySlice(runs, from, sliceMs) {
  const slices = new Map();
  for (const r of runs) {
    const k = Math.floor((r.created - from) / sliceMs);
    slices.set(k, [...(slices.get(k) ?? []), r.ms]);
  }
  return [...slices.entries()].sort((a, b) => a[0] - b[0]).map(([k, ms]) => ({ fromS: (k * sliceMs) / 1000, ...summarize(ms) }));
}

export async function benchBulkRerun(log = console.log) {
  const boxMs = boxCalibrationMs();
  const cluster = await startBenchCluster({ label: 'bulk-rerun' });
  let workers;
  let db;
  try {
    db = await benchDb(cluster.directUrl);
    const seedStarted = Date.now();
    await seedFailed(db, cluster);
    progress(`${PIPELINES} Failed pipelines written (${seconds(Date.now() - seedStarted)} s)`);
    workers = await startWorkerProcesses({ cluster, slots: 32, count: 2, label: 'bulk-rerun' });

    const totalSeconds = BASELINE_SECONDS + PIPELINES / RATE + 30;
    const trafficStarted = Date.now();
    const traffic = createOpenLoop(cluster, { perSecond: OTHER_PER_SECOND, seconds: totalSeconds, stages: 1, prefix: 'other' });
    await sleep(BASELINE_SECONDS * 1000);

    const opStarted = Date.now();
    const op = await api(cluster, 'POST', '/pipelines/bulk-rerun', {
      filter: { status: ['Failed'], name: 'bulk-' },
      from: 'failed',
      maxPerSecond: RATE,
    });
    progress(`operation ${op.id}: ${op.matched} matched`);
    const samples = [];
    let view = op;
    while (view.status === 'Running' && Date.now() - opStarted < TIMEOUT_MS) {
      await sleep(1000);
      view = await api(cluster, 'GET', `/operations/${op.id}`);
      samples.push({ at: Date.now(), done: view.done, failed: view.failed });
    }
    const opEnded = Date.now();
    const { answers } = await traffic;
    const ids = answers.filter((a) => a.id !== null).map((a) => a.id);
    await sleep(5000); // the last other pipelines finish
    const firstProgress = samples.find((s) => s.done > 0);
    const last = samples[samples.length - 1];
    const achieved = firstProgress && last && last.at > firstProgress.at ? (last.done - firstProgress.done) / ((last.at - firstProgress.at) / 1000) : null;
    const { rows: reruns } = await db.query(
      `SELECT count(*) FILTER (WHERE status = 'Completed')::int AS completed, count(*)::int AS n FROM pipelines WHERE rerun_of IS NOT NULL`,
    );
    const alone = (await otherRuns(db, ids, trafficStarted + 2000, opStarted)).map((r) => r.ms);
    const duringRuns = await otherRuns(db, ids, opStarted, opEnded);
    const during = duringRuns.map((r) => r.ms);
    log(
      JSON.stringify({
        bench: 'bulk-rerun',
        boxCalibrationMs: boxMs,
        pipelines: PIPELINES,
        maxPerSecond: RATE,
        operation: {
          status: view.status,
          matched: view.matched,
          done: view.done,
          failed: view.failed,
          seconds: seconds(opEnded - opStarted),
          achievedPerSecond: achieved === null ? null : +achieved.toFixed(1),
        },
        reruns: reruns[0],
        otherTraffic: {
          perSecond: OTHER_PER_SECOND,
          answers: answerCounts(answers),
          aloneMs: summarize(alone),
          duringMs: summarize(during),
          duringBy5s: bySlice(duringRuns, opStarted, 5000),
        },
      }),
    );
  } finally {
    await workers?.stop?.();
    await db?.end?.();
    await cluster.stop();
  }
}
