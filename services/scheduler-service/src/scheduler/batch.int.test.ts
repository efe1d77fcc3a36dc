// Set-based firing (decision 0086): a pass fires many due schedules per transaction with one write
// statement, plans each definition once (trace ids and span ids stay per pipeline), splits writes
// of huge definitions, and leaves Replace cancellations to the guarded path.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadPipeline } from '@po/db';
import { T0, startScheduler, type SchedulerHarness } from '../testing/harness.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler({ misfireGraceSeconds: 60 });
});
afterAll(async () => {
  await h?.close();
});
// Each test starts at T0 with only its own schedules Active.
beforeEach(async () => {
  h.clock.now = T0;
  await h.db.schedule.updateMany({ data: { status: 'Archived', nextTickAt: null, nextRunAt: null } });
});

const MINUTE = 60_000;

const definitionOf = (i: number) => ({
  name: `burst-${i}`,
  stages: Array.from({ length: 1 + (i % 3) }, (_, k) => ({ stageName: `s${k}`, stageHandlerName: `h${i % 5}`, input: `in-${i}-${k}` })),
  ...(i % 4 === 0 ? { pipelineContextItems: [{ key: 'who', value: `v${i}` }, { key: 'secret', value: `p${i}`, isSensitive: true }] } : {}),
  ...(i % 5 === 0 ? { pipelineKeywords: [{ key: 'batch', value: `k${i}` }] } : {}),
});

describe('a burst of due schedules', () => {
  it('300 schedules due at once: each gets exactly one run and one pipeline with its own stages; a second pass fires nothing', async () => {
    const schedules = [];
    for (let i = 0; i < 300; i++) {
      const settings = i % 2 === 0 ? { kind: 'Interval' as const, intervalSeconds: 60 } : { kind: 'Once' as const, runAt: new Date(T0.getTime() + MINUTE) };
      schedules.push({ i, schedule: await h.createSchedule({ ...settings, definition: definitionOf(i) }) });
    }
    h.advance(MINUTE);
    const summary = await h.pass(3);
    expect(summary).toMatchObject({ schedules: 300, ticks: { created: 300, failed: 0, skipped: 0, queued: 0, already_fired: 0 }, failed: 0 });

    const ids = schedules.map((s) => BigInt(s.schedule.id));
    const runs = await h.db.scheduleRun.findMany({ where: { scheduleId: { in: ids } } });
    expect(runs).toHaveLength(300);
    const pipelines = await h.db.pipeline.findMany({
      where: { scheduleId: { in: ids } },
      include: { stages: { orderBy: { position: 'asc' } }, contextItems: { orderBy: { id: 'asc' } }, keywords: { orderBy: { id: 'asc' } } },
    });
    expect(pipelines).toHaveLength(300);
    const pipelineOf = new Map(pipelines.map((p) => [p.id, p]));
    const runOf = new Map(runs.map((r) => [r.scheduleId, r]));
    const traceIds = new Set(pipelines.map((p) => p.traceId));
    expect(traceIds.size).toBe(300);
    for (const { i, schedule } of schedules) {
      const run = runOf.get(BigInt(schedule.id))!;
      expect(run).toMatchObject({ trigger: 'Scheduled', status: 'Created', reason: null, tick: schedule.nextTickAt, createdAt: h.clock.now });
      const p = pipelineOf.get(run.pipelineId!)!;
      const definition = definitionOf(i);
      expect(p).toMatchObject({ scheduleId: BigInt(schedule.id), applicationId: h.applicationId, name: definition.name, status: 'NotStarted', createdAt: h.clock.now, dispatchRequestedAt: h.clock.now });
      expect(p.stages.map((s) => [s.position, s.name, s.handlerName, s.input])).toEqual(definition.stages.map((s, k) => [k, s.stageName, s.stageHandlerName, s.input]));
      expect(p.contextItems.map((c) => [c.key, c.value, c.isSensitive])).toEqual((definition.pipelineContextItems ?? []).map((c) => [c.key, c.value, c.isSensitive ?? false]));
      expect(p.keywords.map((k) => [k.key, k.value])).toEqual((definition.pipelineKeywords ?? []).map((k) => [k.key, k.value]));
      const after = await h.schedule(schedule.id);
      expect(after.nextTickAt).toEqual(i % 2 === 0 ? new Date(schedule.nextTickAt!.getTime() + MINUTE) : null);
    }

    const again = await h.pass(3);
    expect(again.schedules).toBe(0);
    expect(await h.db.scheduleRun.count({ where: { scheduleId: { in: ids } } })).toBe(300);
    expect(await h.db.pipeline.count({ where: { scheduleId: { in: ids } } })).toBe(300);
  }, 120_000);
});

describe('planned definitions', () => {
  it('each pipeline has its own trace id and span ids; a new version, a traceId-only change and a rewrite of the definition all fire as stored', async () => {
    const s = await h.createSchedule({ kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Allow', definition: definitionOf(1) });
    const created = async () => {
      h.advance(MINUTE);
      await h.pass();
      const runs = await h.runs(s.id);
      return (await loadPipeline(h.db, runs[runs.length - 1]!.pipelineId!))!;
    };
    const first = await created();
    const second = await created();
    expect(second.traceId).not.toBe(first.traceId);
    expect(second.stages.map((st) => st.spanId)).toHaveLength(2);
    expect(new Set([...first.stages, ...second.stages].map((st) => st.spanId)).size).toBe(4);
    expect(second.stages.map((st) => st.input)).toEqual(['in-1-0', 'in-1-1']);

    // A behaviour-changing PUT: version + 1.
    await h.db.schedule.update({ where: { id: BigInt(s.id) }, data: { definition: definitionOf(2), definitionVersion: 2, updatedAt: h.clock.now } });
    expect((await created()).stages.map((st) => st.input)).toEqual(['in-2-0', 'in-2-1', 'in-2-2']);

    // Only definition.traceId differs: version kept, updatedAt set (addendum §14.7).
    const traceId = 'ab'.repeat(16);
    await h.db.schedule.update({ where: { id: BigInt(s.id) }, data: { definition: { ...definitionOf(2), traceId }, updatedAt: h.clock.now } });
    const fixed = [await created(), await created()];
    expect(fixed.map((p) => p.traceId)).toEqual([traceId, traceId]);
    expect(fixed[0]!.stages[0]!.spanId).not.toBe(fixed[1]!.stages[0]!.spanId);

    // Rewritten without a new version or updatedAt (as the definitions test does): its size differs.
    await h.db.schedule.update({ where: { id: BigInt(s.id) }, data: { definition: definitionOf(30) } });
    expect((await created()).stages.map((st) => st.input)).toEqual(['in-30-0']);
  });

  it('huge definitions are read one at a time and written in several statements; every schedule fires from its own', async () => {
    // 14 stages of 256 KiB: ~3.5 MiB each, three of them exceed one write statement's 8 MiB.
    const huge = (tag: string) => ({
      name: `huge-${tag}`,
      stages: Array.from({ length: 14 }, (_, k) => ({ stageName: `s${k}`, stageHandlerName: 'h', input: `${tag}${k}:${randomBytes(190_000).toString('base64')}` })),
    });
    const definitions = ['a', 'b', 'c'].map(huge);
    const large = await Promise.all(definitions.map((definition) => h.createSchedule({ kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Allow', catchupPolicy: 'All', definition })));
    const small = await Promise.all([3, 4, 5].map((i) => h.createSchedule({ kind: 'Interval', intervalSeconds: 60, definition: definitionOf(i) })));
    h.advance(MINUTE);
    const summary = await h.pass();
    expect(summary).toMatchObject({ schedules: 6, ticks: { created: 6 }, failed: 0 });
    for (const [k, s] of large.entries()) {
      const [run, ...rest] = await h.runs(s.id);
      expect(rest).toEqual([]);
      const p = (await loadPipeline(h.db, run!.pipelineId!))!;
      expect(p.name).toBe(definitions[k]!.name);
      expect(p.stages.map((st) => st.input)).toEqual(definitions[k]!.stages.map((st) => st.input));
    }
    for (const [k, s] of small.entries()) {
      const [run] = await h.runs(s.id);
      expect((await loadPipeline(h.db, run!.pipelineId!))!.name).toBe(`burst-${k + 3}`);
    }
    // Catch-up of a huge definition: several pipelines from one template in one statement, each complete.
    await h.db.schedule.updateMany({ where: { id: { in: [...large.slice(1), ...small].map((x) => BigInt(x.id)) } }, data: { status: 'Archived', nextRunAt: null } });
    h.advance(5 * MINUTE);
    await h.pass();
    const runs = await h.runs(large[0]!.id);
    // Ticks at +2..+6 min, handled at +6 min: more than 60 s late is missed (catch-up All).
    expect(runs.map((r) => [r.trigger, r.status])).toEqual([
      ['Scheduled', 'Created'],
      ['Catchup', 'Created'],
      ['Catchup', 'Created'],
      ['Catchup', 'Created'],
      ['Scheduled', 'Created'],
      ['Scheduled', 'Created'],
    ]);
    for (const run of runs) expect((await loadPipeline(h.db, run.pipelineId!))!.stages.map((st) => st.input)).toEqual(definitions[0]!.stages.map((st) => st.input));
  }, 120_000);
});

describe('Replace in a batch', () => {
  it('catch-up ticks of a Replace schedule each cancel the one before (guarded), while the rest of the batch fires set-based', async () => {
    const replace = await h.createSchedule({ kind: 'Interval', intervalSeconds: 600, overlapPolicy: 'Replace', catchupPolicy: 'All', catchupMax: 3 });
    const others = await Promise.all([6, 7].map((i) => h.createSchedule({ kind: 'Interval', intervalSeconds: 600, catchupPolicy: 'One', definition: definitionOf(i) })));
    h.advance(3_600_000 + 90_000);
    const summary = await h.pass();
    expect(summary).toMatchObject({ schedules: 3, ticks: { created: 5 }, failed: 0 });
    const runs = await h.runs(replace.id);
    expect(runs.map((r) => [r.trigger, r.status, r.pipelineStatus])).toEqual([
      ['Catchup', 'Created', 'Cancelled'],
      ['Catchup', 'Created', 'Cancelled'],
      ['Catchup', 'Created', 'NotStarted'],
    ]);
    expect(runs.map((r) => r.reason)).toEqual([null, `replaced:${runs[0]!.pipelineId}`, `replaced:${runs[1]!.pipelineId}`]);
    for (const s of others) expect((await h.runs(s.id)).map((r) => [r.trigger, r.status])).toEqual([['Catchup', 'Created']]);
  });
});
