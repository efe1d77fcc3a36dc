// The scheduler loop in real time: a timer to the earliest nextRunAt, re-read at least every
// poll interval, fires ticks well within the 5 s of addendum §1; stop() lets the pass finish.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScheduler, type SchedulerHarness } from '../testing/harness.js';
import { startSchedulerLoop } from './loop.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler();
});
afterAll(async () => {
  await h?.close();
});

async function firstRunAt(scheduleId: number, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [run] = await h.runs(scheduleId);
    if (run) return Date.now();
    await sleep(20);
  }
  return null;
}

describe('scheduler loop (real clock)', () => {
  it('fires a tick close to its fire time, including one planned while the loop sleeps', async () => {
    const deps = { ...h.deps, clock: () => new Date() };
    h.clock.now = new Date();
    const early = await h.createSchedule({ kind: 'Once', runAt: new Date(Date.now() + 600) });
    const loop = startSchedulerLoop(deps, { pollIntervalMs: 1000, concurrency: 2 });
    try {
      const firedEarly = await firstRunAt(early.id, 5000);
      expect(firedEarly).not.toBeNull();
      expect(firedEarly! - early.runAt!.getTime()).toBeLessThan(1000);

      await sleep(300); // the loop now sleeps with nothing due
      h.clock.now = new Date();
      const later = await h.createSchedule({ kind: 'Once', runAt: new Date(Date.now() + 2000) });
      const firedLater = await firstRunAt(later.id, 6000);
      expect(firedLater).not.toBeNull();
      expect(firedLater! - later.runAt!.getTime()).toBeLessThan(1000);
      const [run] = await h.runs(later.id);
      const pipeline = await h.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(run!.pipelineId!) } });
      expect(pipeline.createdAt.getTime() - later.runAt!.getTime()).toBeLessThan(1000);
      expect(pipeline.createdAt.getTime()).toBeGreaterThanOrEqual(later.runAt!.getTime());
    } finally {
      const stopping = Date.now();
      await loop.stop();
      expect(Date.now() - stopping).toBeLessThan(2000);
    }
  });
});
