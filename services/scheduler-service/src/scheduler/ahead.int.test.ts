// Preparing ahead (decision 0097): the ticks of a coming fire instant are written before it and
// commit at it, so nothing is visible early, everything is stamped with the instant, a schedule
// whose outcome could still change is left for the regular pass, and two replicas still fire each
// tick once. Real clock: the ahead pass waits for a real instant.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startScheduler, type SchedulerHarness } from '../testing/harness.js';
import type { SchedulerDeps } from './deps.js';
import { AHEAD_MIN_SCHEDULES, startSchedulerLoop } from './loop.js';
import { runAheadPass, runDuePass } from './pass.js';

let h: SchedulerHarness;
let deps: SchedulerDeps;
beforeAll(async () => {
  h = await startScheduler();
  deps = { ...h.deps, clock: () => new Date() };
});
afterAll(async () => {
  await h?.close();
});
// Each test counts only its own schedules' ticks.
beforeEach(async () => {
  await h.db.schedule.updateMany({ data: { status: 'Archived', nextTickAt: null, nextRunAt: null } });
});

async function onceSchedules(count: number, at: Date) {
  h.clock.now = new Date();
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push((await h.createSchedule({ kind: 'Once', runAt: at })).id);
  return ids;
}

const pipelinesOf = (ids: readonly number[]) => h.db.pipeline.findMany({ where: { scheduleId: { in: ids.map(BigInt) } } });
const runsOf = (ids: readonly number[]) => h.db.scheduleRun.findMany({ where: { scheduleId: { in: ids.map(BigInt) } } });

async function untilWallClock(at: number) {
  const left = at - Date.now();
  if (left > 0) await sleep(left);
}

describe('ticks prepared ahead', () => {
  it('are written before their instant, invisible until it, then all visible at once, stamped with the instant', async () => {
    // Far enough ahead for the creations and the batches' writes on a loaded machine (3.5 s was
    // not, beside a Redis-outage e2e file and another checkout's tests: the checks below then ran
    // after the instant and saw its runs).
    const at = new Date(Date.now() + 8000);
    const ids = await onceSchedules(40, at);
    let settledAt: number | null = null;
    // Three batches per worker's turn: one waits for the instant while the next is written.
    const ahead = runAheadPass(deps, at, { concurrency: 2, batchSize: 15 }).then((summary) => {
      settledAt = Date.now();
      return summary;
    });

    await untilWallClock(at.getTime() - 250);
    expect(Date.now(), 'the checks before the instant must run before it').toBeLessThan(at.getTime() - 100);
    expect(settledAt).toBeNull();
    expect(await pipelinesOf(ids)).toHaveLength(0);
    expect(await runsOf(ids)).toHaveLength(0);
    // The batches hold their schedules (a PUT or pause waits for the instant) and sit written, idle
    // in their transactions, waiting for the commit.
    await expect(h.db.$transaction((tx) => tx.$queryRawUnsafe(`SELECT id FROM schedules WHERE id = ANY($1::bigint[]) FOR UPDATE NOWAIT`, ids))).rejects.toThrow(/lock/);
    const [row] = await h.db.$queryRaw<{ waiting: number }[]>`
      SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`;
    expect(row?.waiting).toBeGreaterThanOrEqual(1);

    const summary = await ahead;
    expect(settledAt!).toBeGreaterThanOrEqual(at.getTime());
    expect(summary).toMatchObject({ schedules: 40, ticks: { created: 40, failed: 0, skipped: 0, queued: 0 }, failed: 0 });
    const pipelines = await pipelinesOf(ids);
    expect(pipelines).toHaveLength(40);
    for (const p of pipelines) expect(p).toMatchObject({ createdAt: at, dispatchRequestedAt: at, status: 'NotStarted' });
    const runs = await runsOf(ids);
    expect(runs).toHaveLength(40);
    for (const r of runs) expect(r).toMatchObject({ tick: at, createdAt: at, status: 'Created', trigger: 'Scheduled' });
    for (const id of ids) expect((await h.schedule(id)).nextRunAt).toBeNull();

    expect((await runDuePass(deps, { concurrency: 2 })).schedules).toBe(0);
  }, 30_000);

  it('leave a schedule whose open pipeline may still end before the instant to the regular pass; Allow is prepared', async () => {
    h.clock.now = new Date();
    const skip = await h.createSchedule({ kind: 'Interval', intervalSeconds: 2, overlapPolicy: 'Skip' });
    const allow = await h.createSchedule({ kind: 'Interval', intervalSeconds: 2, overlapPolicy: 'Allow' });
    const first = skip.nextRunAt!;
    expect(allow.nextRunAt).toEqual(first);
    await untilWallClock(first.getTime());
    // Both fire their first tick; their pipelines stay open.
    expect((await runDuePass(deps, { concurrency: 1 })).ticks.created).toBe(2);

    const second = new Date(first.getTime() + 2000);
    const summary = await runAheadPass(deps, second, { concurrency: 1 });
    expect(summary).toMatchObject({ schedules: 1, ticks: { created: 1 } });
    expect((await h.runs(allow.id)).map((r) => r.scheduledFor)).toEqual([first, second]);
    expect((await h.runs(skip.id)).map((r) => r.scheduledFor)).toEqual([first]);

    // The regular pass at the instant decides the Skip schedule's tick against what is open then.
    const regular = await runDuePass(deps, { concurrency: 1 });
    expect(regular).toMatchObject({ schedules: 1, ticks: { skipped: 1 } });
    const runs = await h.runs(skip.id);
    expect(runs.map((r) => [r.scheduledFor, r.status])).toEqual([
      [first, 'Created'],
      [second, 'Skipped'],
    ]);
  }, 30_000);

  it('two replicas preparing the same instant fire each tick exactly once', async () => {
    // 200 schedules: more than one replica holds before the instant (2 workers × 3 batches × 20),
    // so both take part.
    const at = new Date(Date.now() + 4000);
    const ids = await onceSchedules(200, at);
    const other = { ...h.replica(), clock: () => new Date() };
    const [a, b] = await Promise.all([runAheadPass(deps, at, { concurrency: 2, batchSize: 10 }), runAheadPass(other, at, { concurrency: 2, batchSize: 10 })]);
    const [c, d] = await Promise.all([runDuePass(deps, { concurrency: 2 }), runDuePass(other, { concurrency: 2 })]);
    expect(a.ticks.created + b.ticks.created + c.ticks.created + d.ticks.created).toBe(200);
    expect(a.ticks.created).toBeGreaterThan(0);
    expect(b.ticks.created).toBeGreaterThan(0);
    expect(await runsOf(ids)).toHaveLength(200);
    const pipelines = await pipelinesOf(ids);
    expect(pipelines).toHaveLength(200);
    expect(new Set(pipelines.map((p) => p.scheduleId)).size).toBe(200);
  }, 30_000);

  it('take only the schedules of their instant: one due earlier is left to the regular pass', async () => {
    const at = new Date(Date.now() + 1500);
    const [early] = await onceSchedules(1, new Date(at.getTime() - 300));
    const ids = await onceSchedules(3, at);
    const summary = await runAheadPass(deps, at, { concurrency: 1 });
    expect(summary.ticks.created).toBe(3);
    expect(await runsOf(ids)).toHaveLength(3);
    expect(await runsOf([early!])).toHaveLength(0);
    expect((await runDuePass(deps, { concurrency: 1 })).ticks.created).toBe(1);
  }, 30_000);

  it('the loop prepares a crowded fire instant (AHEAD_MIN_SCHEDULES sharing it) and commits it at the instant, while the regular loop fires the rest', async () => {
    const at = new Date(Date.now() + 1800);
    const crowd = await onceSchedules(AHEAD_MIN_SCHEDULES, at);
    const [lone] = await onceSchedules(1, new Date(at.getTime() + 7));
    const all = [...crowd, lone!];
    const loop = startSchedulerLoop(deps, { pollIntervalMs: 200, concurrency: 2, aheadMs: 400 });
    try {
      await untilWallClock(at.getTime() - 100);
      expect(await runsOf(all)).toHaveLength(0);
      for (let i = 0; i < 150 && (await runsOf(all)).length < all.length; i++) await sleep(20);
    } finally {
      await loop.stop();
    }
    expect(await runsOf(all)).toHaveLength(all.length);
    const pipelines = await pipelinesOf(all);
    expect(pipelines).toHaveLength(all.length);
    // Only a batch written as of the instant carries it exactly; the regular pass stamps its own now.
    for (const p of pipelines.filter((p) => p.scheduleId !== BigInt(lone!))) expect(p.createdAt).toEqual(at);
  }, 30_000);
});
