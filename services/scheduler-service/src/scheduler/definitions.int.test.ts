// Bounded memory (issue 10 item 5): a fire batch locks up to 50 due schedules, and one definition
// can be ~30 MB (100 stages of 256 KiB inputs). The batch is locked without definitions; each
// schedule's definition is read when one of its ticks creates a pipeline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPipeline, lockDueSchedules } from '@po/db';
import { startScheduler, type SchedulerHarness } from '../testing/harness.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler();
});
afterAll(async () => {
  await h?.close();
});

const MINUTE = 60_000;
const definitionOf = (name: string, input: string) => ({ name, stages: [{ stageName: 'work', stageHandlerName: 'worker', input }] });

describe('definitions of due schedules', () => {
  it('the batch is locked without definitions; each schedule fires from its own, as stored when it fires', async () => {
    const big = 'x'.repeat(256 * 1024);
    const schedules = await Promise.all(
      ['a', 'b', 'c'].map((n) => h.createSchedule({ kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Allow', definition: definitionOf(`p-${n}`, `in-${n}`) })),
    );
    const large = await h.createSchedule({ kind: 'Interval', intervalSeconds: 60, definition: definitionOf('big', big) });
    const catchup = await h.createSchedule({ kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Allow', catchupPolicy: 'All', definition: definitionOf('catchup', 'in-catchup') });
    // A PUT between planning and firing changes what the next tick creates (read under the row lock).
    await h.db.schedule.update({ where: { id: BigInt(schedules[2]!.id) }, data: { definition: definitionOf('p-c2', 'in-c2') } });
    h.advance(5 * MINUTE);

    const locked = await h.db.$transaction((tx) => lockDueSchedules(tx, h.clock.now, { limit: 50 }));
    const byId = (x: number, y: number) => x - y;
    // The three are created side by side, so their ids come in any order.
    expect(locked.map((r) => r.id).sort(byId)).toEqual([...schedules, large, catchup].map((s) => s.id).sort(byId));
    for (const row of locked) expect(Object.keys(row)).not.toContain('definition');

    await h.pass();
    const created = async (scheduleId: number) => {
      const runs = (await h.runs(scheduleId)).filter((r) => r.status === 'Created');
      return Promise.all(runs.map(async (r) => (await loadPipeline(h.db, r.pipelineId!))!));
    };
    for (const [i, n] of ['a', 'b', 'c2'].entries()) {
      const [p] = await created(schedules[i]!.id);
      expect([p!.name, p!.stages[0]!.input]).toEqual([`p-${n}`, `in-${n}`]);
    }
    const [bigPipeline] = await created(large.id);
    expect(bigPipeline!.stages[0]!.input).toBe(big);
    const caughtUp = await created(catchup.id);
    expect(caughtUp.length).toBeGreaterThan(1);
    for (const p of caughtUp) expect(p.stages[0]!.input).toBe('in-catchup');
  });
});
