// The burst phase of the schedules bench (schedules.mjs): BENCH_SCHEDULES Once schedules, no
// jitter, all due at the same whole second BENCH_SCHEDULE_LEAD_SECONDS ahead; lag from that fire
// time to each pipeline's visibility (the reader) and to its stamp (pipelines.created_at).
import { setTimeout as sleep } from 'node:timers/promises';
import { summarize } from './cluster.mjs';
import { BENCH_DEFINITION, createSchedules, fireAtMs } from './schedules-common.mjs';

/**
 * Drives one burst on a started phase (`ctx`: cluster, db, startReader(), startMeter()). Resolves with
 * the figures of the phase's JSON line, and `meterUsage` (the window's resources).
 */
export async function runBurst(ctx, { schedules, leadSeconds, creators, waitSeconds }) {
  const { cluster, db } = ctx;
  // A whole second, so "all due in the same second" holds to the millisecond.
  const runAt = new Date(Math.ceil((Date.now() + leadSeconds * 1000) / 1000) * 1000);
  const created = await createSchedules(cluster, {
    count: schedules,
    creators,
    make: (i) => ({
      name: `burst-${i}`,
      body: { kind: 'Once', runAt: runAt.toISOString(), definition: BENCH_DEFINITION },
    }),
    deadline: runAt.getTime() - 200,
  });
  if (created.summary.firstError)
    console.error(
      `bench: schedules burst: ${created.summary.non2xx} creations failed, first: ${created.summary.firstError}`,
    );
  const createdBeforeRunAt = Date.now() < runAt.getTime();
  const expected = created.answers.filter((a) => a?.id != null).length;

  // The reader starts after the creations (it would slow them down), shortly before runAt; the
  // window runs from a second before runAt to the last pipeline seen (or the deadline).
  await sleep(Math.max(0, runAt.getTime() - 2000 - Date.now()));
  const reader = await ctx.startReader();
  await sleep(Math.max(0, runAt.getTime() - 1000 - Date.now()));
  const meter = await ctx.startMeter();
  const deadline = runAt.getTime() + waitSeconds * 1000;
  let done = false;
  let lastDbCheck = 0;
  while (!done && Date.now() < deadline) {
    await sleep(100);
    const seen = await reader.count();
    if (seen >= expected) done = true;
    else if (Date.now() - lastDbCheck >= 1000 && Date.now() > runAt.getTime()) {
      lastDbCheck = Date.now();
      // Every tick handled (some without a pipeline) and every pipeline seen: nothing more comes.
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM schedule_runs WHERE trigger <> 'Manual')::int AS runs,
                (SELECT count(*) FROM pipelines WHERE schedule_id IS NOT NULL)::int AS pipelines`,
      );
      if (rows[0].runs >= expected && seen >= rows[0].pipelines) done = true;
    }
  }
  const timedOut = !done;
  if (timedOut)
    console.error(`bench: schedules burst: not every tick was handled in ${waitSeconds} s`);
  const usage = await meter.end();
  await sleep(50);
  return { runAt, created, createdBeforeRunAt, expected, timedOut, usage };
}

/** The burst's figures, read once the services stopped. */
export async function burstFigures(db, seen, run) {
  const { rows: runs } = await db.query(
    `SELECT schedule_id::float8 AS s, trigger, status, scheduled_for, pipeline_id::float8 AS p
     FROM schedule_runs WHERE trigger <> 'Manual'`,
  );
  const { rows: pipes } = await db.query(
    `SELECT schedule_id::float8 AS s, count(*)::int AS n FROM pipelines
     WHERE schedule_id IS NOT NULL GROUP BY schedule_id`,
  );
  const ids = new Set(run.created.answers.filter((a) => a?.id != null).map((a) => a.id));
  const runsOf = new Map();
  for (const r of runs) {
    if (!runsOf.has(r.s)) runsOf.set(r.s, []);
    runsOf.get(r.s).push(r);
  }
  const fire = fireAtMs(0, run.runAt, 0); // jitter 0: the fire time is runAt for every schedule
  const visible = [];
  const stamped = [];
  let misses = 0;
  let catchup = 0;
  let withoutPipeline = 0;
  let unseen = 0;
  let doubles = 0;
  let firstSeen = Infinity;
  let lastSeen = -Infinity;
  for (const id of ids) {
    const mine = runsOf.get(id) ?? [];
    const scheduled = mine.filter((r) => r.trigger === 'Scheduled');
    if (mine.length > 1) doubles += 1;
    if (scheduled.length === 0) {
      misses += 1;
      if (mine.some((r) => r.trigger === 'Catchup')) catchup += 1;
      continue;
    }
    const r = scheduled[0];
    if (r.p === null) {
      withoutPipeline += 1;
      continue;
    }
    const s = seen.get(r.p);
    if (!s) {
      unseen += 1;
      continue;
    }
    visible.push(s.seenAtMs - fire);
    stamped.push(s.createdAtMs - fire);
    firstSeen = Math.min(firstSeen, s.seenAtMs);
    lastSeen = Math.max(lastSeen, s.seenAtMs);
  }
  const pipelineDoubles = pipes.filter((p) => p.n > 1).length;
  return {
    runAt: run.runAt.toISOString(),
    createdBeforeRunAt: run.createdBeforeRunAt,
    expectedTicks: ids.size,
    runs: runs.length,
    pipelinesVisible: visible.length,
    misses,
    missesWithCatchupRun: catchup,
    scheduledWithoutPipeline: withoutPipeline,
    doubles: doubles + pipelineDoubles,
    doubleRuns: doubles,
    doublePipelines: pipelineDoubles,
    pipelinesNotSeenByReader: unseen,
    timedOut: run.timedOut,
    lagVisibleMs: summarize(visible),
    lagStampedMs: summarize(stamped),
    // First to last pipeline seen: how fast the scheduler worked through the burst.
    spreadMs: visible.length > 0 ? lastSeen - firstSeen : null,
    pipelinesPerSecond:
      visible.length > 1 && lastSeen > fire
        ? +(visible.length / ((lastSeen - fire) / 1000)).toFixed(1)
        : null,
    creation: run.created.summary,
  };
}
