// Jitter larger than the period (addendum §14.4, §14.6; issue 11): each tick fires at its own
// jittered instant, so later ticks fire ahead of earlier ones; none is dropped or fired twice, also
// with two replicas taking turns, and nextRunAt is always the earliest upcoming fire.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jitteredFireAt } from '@po/domain';
import { T0, startScheduler, type SchedulerHarness } from '../testing/harness.js';
import { runDuePass } from './pass.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler({ misfireGraceSeconds: 60 });
});
afterAll(async () => {
  await h?.close();
});

describe('Interval 10 s with jitter 60 s', () => {
  it('fires every tick once, at its own fire time, whichever replica takes the pass', async () => {
    h.clock.now = T0;
    const s = await h.createSchedule({ kind: 'Interval', intervalSeconds: 10, jitterSeconds: 60, overlapPolicy: 'Allow' });
    const fire = (tick: number) => jitteredFireAt(s.id, new Date(tick), 60).getTime();
    const other = h.replica();
    const end = T0.getTime() + 10 * 60_000;
    const passTimes: number[] = [];
    for (let i = 0; ; i++) {
      const { nextRunAt } = await h.schedule(s.id);
      // Each pass wakes 250 ms after the earliest upcoming fire, as the timer would.
      const wake = nextRunAt!.getTime() + 250;
      if (wake > end) break;
      h.clock.now = new Date(wake);
      passTimes.push(wake);
      await (i % 2 === 0 ? h.pass() : runDuePass(other));
    }

    const now = h.clock.now.getTime();
    const allTicks = Array.from({ length: 200 }, (_, k) => T0.getTime() + (k + 1) * 10_000);
    const ticks = allTicks.filter((t) => fire(t) <= now);
    const runs = await h.runs(s.id);
    expect(runs.map((r) => r.scheduledFor.getTime()).sort((a, b) => a - b)).toEqual(ticks);
    for (const run of runs) {
      expect(run).toMatchObject({ trigger: 'Scheduled', status: 'Created' });
      expect(run.pipelineId).not.toBeNull();
      // Handled by the first pass after its own fire time: within the 250 ms the wake adds.
      expect(run.createdAt.getTime() - fire(run.scheduledFor.getTime())).toBeGreaterThanOrEqual(0);
      expect(run.createdAt.getTime() - fire(run.scheduledFor.getTime())).toBeLessThanOrEqual(250);
    }
    // Later ticks really fired ahead of earlier ones.
    const inFireOrder = [...runs].sort((a, b) => a.id - b.id).map((r) => r.scheduledFor.getTime());
    expect(inFireOrder).not.toEqual([...inFireOrder].sort((a, b) => a - b));

    // nextRunAt is the earliest fire of the ticks not yet handled.
    const handled = new Set(runs.map((r) => r.scheduledFor.getTime()));
    const upcoming = allTicks.filter((t) => !handled.has(t)).map(fire);
    expect(upcoming.every((f) => f > now)).toBe(true);
    expect((await h.schedule(s.id)).nextRunAt!.getTime()).toBe(Math.min(...upcoming));
  });

  it('a pass at the same instant again, or on a replica whose clock is behind, fires nothing', async () => {
    h.clock.now = T0;
    const s = await h.createSchedule({ kind: 'Interval', intervalSeconds: 10, jitterSeconds: 60, overlapPolicy: 'Allow' });
    h.clock.now = new Date(T0.getTime() + 70_000);
    await h.pass();
    const first = (await h.runs(s.id)).length;
    expect(first).toBeGreaterThan(0);
    await h.pass();
    h.clock.now = new Date(T0.getTime() + 65_000);
    const summary = await runDuePass(h.replica());
    expect(summary.ticks.already_fired).toBe(0);
    expect(await h.runs(s.id)).toHaveLength(first);
  });
});
