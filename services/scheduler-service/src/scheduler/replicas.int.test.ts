// Horizontal scaling: two scheduler replicas over one database fire every tick exactly once
// (schedule row locks with SKIP LOCKED + the unique (schedule_id, tick) of runs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { T0, startScheduler, type SchedulerHarness } from '../testing/harness.js';
import { runDuePass, type PassSummary } from './pass.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler();
});
afterAll(async () => {
  await h?.close();
});

const SCHEDULES = 200;
const INTERVAL_S = 10;
const SIMULATED_S = 120;

describe('two replicas', () => {
  it(`${SCHEDULES} schedules every ${INTERVAL_S} s for ${SIMULATED_S} simulated seconds: no tick fired twice, none lost`, async () => {
    const anchors = new Map<number, number>();
    for (let i = 0; i < SCHEDULES; i++) {
      h.clock.now = new Date(T0.getTime() + (i % INTERVAL_S) * 1000 + (i % 7) * 37); // spread the ticks
      const s = await h.createSchedule({ kind: 'Interval', intervalSeconds: INTERVAL_S, overlapPolicy: i % 2 === 0 ? 'Allow' : 'Skip' });
      anchors.set(s.id, s.planAnchor.getTime());
    }
    const replicas = [h.replica(), h.replica()];
    const end = T0.getTime() + SIMULATED_S * 1000;
    const summaries: PassSummary[] = [];
    // Steps of 250 ms, with a few jumps so both replicas meet a large due set at once.
    for (let t = T0.getTime() + 250; t <= end; t += t % 30_000 === 0 ? 5000 : 250) {
      h.clock.now = new Date(t);
      summaries.push(...(await Promise.all(replicas.map((deps) => runDuePass(deps, { concurrency: 4 })))));
    }
    h.clock.now = new Date(end);
    summaries.push(...(await Promise.all(replicas.map((deps) => runDuePass(deps, { concurrency: 4 })))));

    const perTick = await h.db.$queryRaw<{ schedule_id: bigint; tick: Date; n: bigint }[]>`
      SELECT schedule_id, tick, count(*) AS n FROM schedule_runs GROUP BY schedule_id, tick`;
    expect(perTick.filter((r) => r.n !== 1n)).toEqual([]);

    const fired = new Map<number, number[]>();
    for (const r of perTick) fired.set(Number(r.schedule_id), [...(fired.get(Number(r.schedule_id)) ?? []), r.tick.getTime()]);
    let expectedTotal = 0;
    for (const [id, anchor] of anchors) {
      const expected = Array.from({ length: Math.floor((end - anchor) / (INTERVAL_S * 1000)) }, (_, k) => anchor + (k + 1) * INTERVAL_S * 1000);
      expectedTotal += expected.length;
      expect((fired.get(id) ?? []).sort((a, b) => a - b), `schedule ${id}`).toEqual(expected);
    }
    expect(perTick).toHaveLength(expectedTotal);

    // Every Created run has its own pipeline; no pipeline without a run.
    const [{ runs, pipelines, distinct }] = await h.db.$queryRaw<{ runs: bigint; pipelines: bigint; distinct: bigint }[]>`
      SELECT (SELECT count(*) FROM schedule_runs WHERE status = 'Created') AS runs,
             (SELECT count(*) FROM pipelines) AS pipelines,
             (SELECT count(DISTINCT pipeline_id) FROM schedule_runs WHERE pipeline_id IS NOT NULL) AS distinct` as [{ runs: bigint; pipelines: bigint; distinct: bigint }];
    expect(runs).toBe(pipelines);
    expect(distinct).toBe(pipelines);
    expect(summaries.reduce((n, s) => n + s.failed + s.ticks.already_fired, 0)).toBe(0);
    // Both replicas did part of the work.
    const handled = [0, 1].map((r) => summaries.filter((_, i) => i % 2 === r).reduce((n, s) => n + s.schedules, 0));
    expect(handled.every((n) => n > 0)).toBe(true);
  }, 120_000);
});
