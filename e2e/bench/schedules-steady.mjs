// The steady phase of the schedules bench (schedules.mjs): BENCH_STEADY_SCHEDULES active schedules
// of mixed kinds (Interval, Cron in several zones, Once; about half with jitter) created through
// the public API, then BENCH_STEADY_SECONDS of measurement. The expected ticks are computed from
// the stored plans with @po/domain's nextTick and jitteredFireAt, and compared with the runs.
import { setTimeout as sleep } from 'node:timers/promises';
import { nextTick } from '@po/domain';
import { summarize } from './cluster.mjs';
import { BENCH_DEFINITION, compact, createSchedules, fireAtMs } from './schedules-common.mjs';

const INTERVALS = [10, 15, 20, 30, 60, 120];
const CRONS = ['* * * * *', '*/2 * * * *', '*/5 * * * *'];
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'];

/** A small seeded generator (mulberry32), so a seed gives the same mix every run. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The bodies: the first `mix[0]`% Interval and `mix[1]`% Cron interleaved, then the Once ones
 * (created last, each with runAt a few seconds after its own PUT plus up to `spreadSeconds`, so
 * they fall in the measured window). Every schedule overlaps Allow: no worker finishes their
 * pipelines, and each tick should still create one.
 */
function planMix({ count, mix, jitterShare, jitterMax, onceLeadSeconds, spreadSeconds, seed }) {
  const rnd = random(seed);
  const pick = (list) => list[Math.floor(rnd() * list.length)];
  const total = mix[0] + mix[1] + mix[2];
  const onces = Math.round((count * mix[2]) / total);
  const recurring = count - onces;
  const intervalShare = mix[0] / Math.max(1, mix[0] + mix[1]);
  const specs = [];
  for (let i = 0; i < count; i++) {
    const jitterSeconds = rnd() < jitterShare ? 1 + Math.floor(rnd() * jitterMax) : 0;
    const common = { definition: BENCH_DEFINITION, overlapPolicy: 'Allow', jitterSeconds };
    if (i >= recurring) {
      const offsetMs = Math.floor(rnd() * spreadSeconds * 1000);
      specs.push(() => ({
        kind: 'Once',
        runAt: new Date(Date.now() + onceLeadSeconds * 1000 + offsetMs).toISOString(),
        ...common,
      }));
    } else if (rnd() < intervalShare) {
      const intervalSeconds = pick(INTERVALS);
      specs.push(() => ({ kind: 'Interval', intervalSeconds, ...common }));
    } else {
      const cronExpression = pick(CRONS);
      const timeZone = pick(ZONES);
      specs.push(() => ({ kind: 'Cron', cronExpression, timeZone, ...common }));
    }
  }
  return specs;
}

/**
 * Every tick of `s` (a stored schedule row) whose fire time is in [fromMs, toMs], from its stored
 * plan: ticks strictly after plan_anchor (creation, or a tick handled before it was read; an
 * Interval's ticks are anchor + k × interval either way), jittered as the scheduler does.
 */
export function expectedTicks(s, fromMs, toMs) {
  const plan = {
    kind: s.kind,
    cronExpression: s.cron_expression,
    intervalSeconds: s.interval_seconds,
    runAt: s.run_at,
    timeZone: s.time_zone,
  };
  const out = [];
  const jitterMs = s.jitter_seconds * 1000;
  let t = nextTick(
    plan,
    s.plan_anchor,
    new Date(Math.max(fromMs - jitterMs - 1, s.plan_anchor.getTime())),
  );
  while (t !== null && t.getTime() <= toMs) {
    const fire = fireAtMs(s.id, t, s.jitter_seconds);
    if (fire >= fromMs && fire <= toMs) out.push({ tickMs: t.getTime(), fireMs: fire });
    t = nextTick(plan, s.plan_anchor, t);
  }
  return out;
}

/**
 * Drives the steady phase on a started phase (`ctx`: cluster, db, startReader(), startMeter()): creates
 * the schedules, reads their plans, measures for `seconds`, then waits (at most `drainSeconds`)
 * until every expected tick has a run. Resolves with what steadyFigures() needs.
 */
export async function runSteady(ctx, o) {
  const { cluster, db } = ctx;
  const specs = planMix({
    count: o.schedules,
    mix: o.mix,
    jitterShare: o.jitterShare,
    jitterMax: o.jitterMax,
    onceLeadSeconds: o.onceLeadSeconds,
    spreadSeconds: o.seconds,
    seed: o.seed,
  });
  const created = await createSchedules(cluster, {
    count: o.schedules,
    creators: o.creators,
    make: (i) => ({ name: `steady-${i}`, body: specs[i]() }),
    deadline: Date.now() + o.createTimeoutSeconds * 1000,
  });
  if (created.summary.firstError)
    console.error(
      `bench: schedules steady: ${created.summary.non2xx} creations failed, first: ${created.summary.firstError}`,
    );
  const ids = created.answers.filter((a) => a?.id != null).map((a) => a.id);
  // The plans as stored (plan_anchor: the creation instant, or a tick handled since).
  const { rows: schedules } = await db.query(
    `SELECT id::float8 AS id, kind, cron_expression, interval_seconds, run_at, time_zone,
            jitter_seconds, plan_anchor
     FROM schedules WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  // The reader starts once the creations are done (it would slow them down); its first poll
  // finds the pipelines made meanwhile, outside the window. An optional warm-up lets the backlog
  // the creations left (ticks fire while they run) drain before the window opens.
  await ctx.startReader();
  await sleep(o.warmupSeconds * 1000);
  const measureStart = Date.now();
  const meter = await ctx.startMeter();
  await sleep(o.seconds * 1000);
  const measureEnd = Date.now();
  const usage = await meter.end();
  const cutoff = measureEnd - o.marginSeconds * 1000;

  const expected = new Map(); // "scheduleId:tickMs" → { s, tickMs, fireMs }
  for (const s of schedules)
    for (const t of expectedTicks(s, measureStart, cutoff))
      expected.set(`${s.id}:${t.tickMs}`, { s, ...t });

  // Drain: until every expected tick is settled — it has a run (any trigger), or the schedule's
  // plan has gone past it (a tick dropped as missed under catch-up None leaves no run) — or the
  // deadline.
  let outstanding = [...expected.values()];
  const drainDeadline = measureEnd + o.drainSeconds * 1000;
  while (outstanding.length > 0 && Date.now() < drainDeadline) {
    const { rows } = await db.query(
      `SELECT e.s::float8 AS s, round(extract(epoch FROM e.t) * 1000)::float8 AS t
       FROM unnest($1::bigint[], $2::timestamptz[]) AS e(s, t) JOIN schedules s ON s.id = e.s
       WHERE s.next_tick_at IS NULL OR s.next_tick_at > e.t
          OR EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = e.s AND r.tick = e.t)`,
      [outstanding.map((e) => e.s.id), outstanding.map((e) => new Date(e.tickMs).toISOString())],
    );
    const have = new Set(rows.map((r) => `${r.s}:${r.t}`));
    outstanding = outstanding.filter((e) => !have.has(`${e.s.id}:${e.tickMs}`));
    if (outstanding.length > 0) await sleep(1000);
  }
  const drainSeconds = +((Date.now() - measureEnd) / 1000).toFixed(1);
  await sleep(100); // the reader's next polls see the last commits
  return {
    created,
    schedules,
    measureStart,
    measureEnd,
    cutoff,
    expected,
    drainSeconds,
    usage,
    unsettledAtDrainEnd: outstanding.length,
  };
}

/** The steady phase's figures, read once the services stopped. */
export async function steadyFigures(db, seen, run, o) {
  const { rows: runs } = await db.query(
    `SELECT schedule_id::float8 AS s, trigger, status, round(extract(epoch FROM tick) * 1000)::float8 AS t,
            pipeline_id::float8 AS p
     FROM schedule_runs WHERE trigger IN ('Scheduled', 'Catchup')`,
  );
  const { rows: pipelineChecks } = await db.query(
    `SELECT
       (SELECT count(*) FROM pipelines p WHERE p.schedule_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM schedule_runs r WHERE r.pipeline_id = p.id))::int AS orphans,
       (SELECT count(*) FROM (SELECT pipeline_id FROM schedule_runs WHERE pipeline_id IS NOT NULL
          GROUP BY pipeline_id HAVING count(*) > 1) x)::int AS shared`,
  );
  const byKey = new Map();
  for (const r of runs) {
    const key = `${r.s}:${r.t}`;
    const list = byKey.get(key);
    if (list) list.push(r);
    else byKey.set(key, [r]);
  }
  const byId = new Map(run.schedules.map((s) => [s.id, s]));
  const kinds = ['Interval', 'Cron', 'Once'];
  const visible = [];
  const stamped = [];
  const visibleByKind = Object.fromEntries(kinds.map((k) => [k, []]));
  const buckets = new Map(); // 10 s of fire time since the window's start → visible lags
  const expectedByKind = Object.fromEntries(kinds.map((k) => [k, 0]));
  const missesByKind = Object.fromEntries(kinds.map((k) => [k, 0]));
  let missesNoRun = 0;
  let missesCatchup = 0;
  let withoutPipeline = 0;
  let unseen = 0;
  let doubles = 0;
  let seenInWindow = 0;
  for (const [key, e] of run.expected) {
    expectedByKind[e.s.kind] += 1;
    const mine = byKey.get(key) ?? [];
    const scheduled = mine.filter((r) => r.trigger === 'Scheduled');
    if (mine.length > 1) doubles += 1;
    if (scheduled.length === 0) {
      missesByKind[e.s.kind] += 1;
      if (mine.length > 0) missesCatchup += 1;
      else missesNoRun += 1;
      continue;
    }
    const pipelineId = scheduled[0].p;
    if (pipelineId === null) {
      withoutPipeline += 1;
      continue;
    }
    const s = seen.get(pipelineId);
    if (!s) {
      unseen += 1;
      continue;
    }
    const lag = s.seenAtMs - e.fireMs;
    visible.push(lag);
    visibleByKind[e.s.kind].push(lag);
    stamped.push(s.createdAtMs - e.fireMs);
    const b = Math.floor((e.fireMs - run.measureStart) / 10_000);
    if (!buckets.has(b)) buckets.set(b, []);
    buckets.get(b).push(lag);
  }
  // Scheduled runs whose fire time falls in the window but that no expected tick explains.
  let extras = 0;
  let doublesAnywhere = 0;
  for (const [key, list] of byKey) {
    if (list.length > 1) doublesAnywhere += 1;
    if (run.expected.has(key)) continue;
    const r = list[0];
    const s = byId.get(r.s);
    if (!s || r.trigger !== 'Scheduled') continue;
    const fire = fireAtMs(s.id, new Date(r.t), s.jitter_seconds);
    if (fire >= run.measureStart && fire <= run.cutoff) extras += 1;
  }
  for (const s of seen.values())
    if (s.scheduleId !== 0 && s.seenAtMs >= run.measureStart && s.seenAtMs <= run.measureEnd)
      seenInWindow += 1;
  const windowSeconds = (run.measureEnd - run.measureStart) / 1000;
  const counts = Object.fromEntries(kinds.map((k) => [k, 0]));
  let jittered = 0;
  for (const s of run.schedules) {
    counts[s.kind] += 1;
    if (s.jitter_seconds > 0) jittered += 1;
  }
  return {
    schedules: { ...counts, jittered, total: run.schedules.length },
    creation: run.created.summary,
    window: {
      start: new Date(run.measureStart).toISOString(),
      warmupSeconds: o.warmupSeconds,
      seconds: +windowSeconds.toFixed(1),
      marginSeconds: o.marginSeconds,
      drainSeconds: run.drainSeconds,
    },
    expectedTicks: run.expected.size,
    expectedByKind,
    handledWithPipeline: visible.length,
    misses: missesNoRun + missesCatchup,
    missesNoRun,
    missesCatchupRun: missesCatchup,
    missesByKind,
    scheduledWithoutPipeline: withoutPipeline,
    // (schedule, tick) with more than one run, pipelines of a schedule no run names, pipelines
    // two runs name: over the whole phase.
    doubles: doublesAnywhere + pipelineChecks[0].orphans + pipelineChecks[0].shared,
    doubleRunsInWindow: doubles,
    doubleRunsAnywhere: doublesAnywhere,
    orphanPipelines: pipelineChecks[0].orphans,
    sharedPipelines: pipelineChecks[0].shared,
    extras,
    unsettledAtDrainEnd: run.unsettledAtDrainEnd,
    pipelinesNotSeenByReader: unseen,
    lagVisibleMs: summarize(visible),
    lagStampedMs: summarize(stamped),
    lagVisibleByKindMs: Object.fromEntries(kinds.map((k) => [k, compact(visibleByKind[k])])),
    // p50/p99 of the visible lag per 10 s of fire time: a lag that keeps growing shows here.
    lagVisibleBy10sMs: [...buckets.keys()]
      .sort((a, b) => a - b)
      .map((b) => ({ fromSecond: b * 10, ...compact(buckets.get(b)) })),
    pipelinesPerSecond: +(seenInWindow / windowSeconds).toFixed(1),
    expectedTicksPerSecond: +(run.expected.size / (windowSeconds - o.marginSeconds)).toFixed(1),
  };
}
