// Overlap policies at fire time (addendum §14.5, §5.6), driven by the scheduler's pass with a
// fake clock. Pipeline statuses are set through the database or the cancel path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPipeline } from '@po/db';
import { cancelPipeline as cancelPipelineInTransaction } from '@po/engine';
import { startScheduler, type SchedulerHarness } from '../testing/harness.js';

let h: SchedulerHarness;
beforeAll(async () => {
  h = await startScheduler();
});
afterAll(async () => {
  await h?.close();
});

const MINUTE = 60_000;
const every = (overlapPolicy: string, extra: Record<string, unknown> = {}) =>
  h.createSchedule({ kind: 'Interval', intervalSeconds: 60, overlapPolicy, ...extra });

describe('no overlap', () => {
  it('fires the tick at its fire time: a Scheduled run, Created, with its pipeline due for dispatch', async () => {
    const s = await every('Skip');
    h.advance(MINUTE - 1);
    expect((await h.pass()).ticks.created).toBe(0);
    h.advance(1);
    await h.pass();
    const [run, ...rest] = await h.runs(s.id);
    expect(rest).toEqual([]);
    expect(run).toMatchObject({ trigger: 'Scheduled', status: 'Created', reason: null, pipelineStatus: 'NotStarted', scheduledFor: s.nextTickAt });
    const pipeline = await loadPipeline(h.db, run!.pipelineId!);
    expect(pipeline).toMatchObject({ applicationId: h.applicationId, scheduleId: BigInt(s.id), idempotencyKey: null, name: 'scheduled', createdAt: h.clock.now });
    expect(pipeline!.dispatchRequestedAt).toEqual(h.clock.now);
    expect(pipeline!.stages.map((st) => [st.name, st.handlerName, st.input])).toEqual([['work', 'worker', 'payload']]);
    const after = await h.schedule(s.id);
    expect(after.nextRunAt).toEqual(new Date(s.nextTickAt!.getTime() + MINUTE));
    expect(after.planAnchor).toEqual(s.nextTickAt);
  });
});

describe('Skip', () => {
  it('records a Skipped run (overlap) while the previous pipeline runs, and creates again once it ended', async () => {
    const s = await every('Skip');
    h.advance(MINUTE);
    await h.pass();
    h.advance(MINUTE);
    await h.pass();
    const [first, second] = await h.runs(s.id);
    expect(second).toMatchObject({ status: 'Skipped', reason: 'overlap', pipelineId: null });
    await h.setPipelineStatus(first!.pipelineId!, 'Completed');
    h.advance(MINUTE);
    await h.pass();
    expect((await h.runs(s.id)).map((r) => r.status)).toEqual(['Created', 'Skipped', 'Created']);
  });

  it('counts a manual run’s pipeline as overlap too', async () => {
    const s = await every('Skip');
    const manual = await h.db.pipeline.create({
      data: { applicationId: h.applicationId, name: 'manual', traceId: 't', scheduleId: BigInt(s.id), createdAt: h.clock.now },
    });
    await h.db.scheduleRun.create({
      data: { scheduleId: BigInt(s.id), applicationId: h.applicationId, trigger: 'Manual', status: 'Created', scheduledFor: h.clock.now, pipelineId: manual.id },
    });
    h.advance(MINUTE);
    await h.pass();
    expect((await h.runs(s.id)).map((r) => [r.trigger, r.status, r.reason])).toEqual([
      ['Manual', 'Created', null],
      ['Scheduled', 'Skipped', 'overlap'],
    ]);
  });
});

describe('Queue', () => {
  it('holds the run (Queued, overlap) and creates its pipeline once the previous one ended', async () => {
    const s = await every('Queue');
    h.advance(MINUTE);
    await h.pass();
    h.advance(MINUTE);
    await h.pass();
    h.advance(MINUTE);
    await h.pass();
    let runs = await h.runs(s.id);
    expect(runs.map((r) => [r.status, r.reason])).toEqual([['Created', null], ['Queued', 'overlap'], ['Queued', 'overlap']]);

    await h.setPipelineStatus(runs[0]!.pipelineId!, 'Failed');
    h.advance(1000); // the next pass, well before the next tick
    await h.pass();
    runs = await h.runs(s.id);
    expect(runs.map((r) => r.status)).toEqual(['Created', 'Created', 'Queued']);
    expect(runs[1]).toMatchObject({ trigger: 'Scheduled', pipelineStatus: 'NotStarted', scheduledFor: new Date(s.nextTickAt!.getTime() + MINUTE) });
    const pipeline = await loadPipeline(h.db, runs[1]!.pipelineId!);
    expect(pipeline!.createdAt).toEqual(h.clock.now);

    // One at a time: the promoted run's pipeline is the new overlap.
    h.advance(1000);
    await h.pass();
    expect((await h.runs(s.id)).map((r) => r.status)).toEqual(['Created', 'Created', 'Queued']);
    await h.db.$transaction((tx) => cancelPipelineInTransaction(tx, runs[1]!.pipelineId!, h.clock.now));
    h.advance(1000);
    await h.pass();
    expect((await h.runs(s.id)).map((r) => r.status)).toEqual(['Created', 'Created', 'Created']);
  });

  it('skips with queue_full once catchupMax runs are Queued', async () => {
    const s = await every('Queue', { catchupMax: 2 });
    for (let i = 0; i < 4; i++) {
      h.advance(MINUTE);
      await h.pass();
    }
    expect((await h.runs(s.id)).map((r) => [r.status, r.reason])).toEqual([
      ['Created', null],
      ['Queued', 'overlap'],
      ['Queued', 'overlap'],
      ['Skipped', 'queue_full'],
    ]);
  });

  it('a tick due when the schedule is free queues behind the older Queued run, which gets the pipeline', async () => {
    const s = await every('Queue');
    h.advance(MINUTE);
    await h.pass();
    h.advance(MINUTE);
    await h.pass();
    const [first] = await h.runs(s.id);
    await h.setPipelineStatus(first!.pipelineId!, 'Completed');
    // The pass that frees the Queued run also fires the next tick: the older run goes first.
    h.advance(MINUTE);
    await h.pass();
    expect((await h.runs(s.id)).map((r) => [r.status, r.reason])).toEqual([['Created', null], ['Created', null], ['Queued', 'overlap']]);
  });
});

describe('Replace', () => {
  it('cancels every unfinished pipeline of the schedule (and its stages), then creates; reason replaced:{newest}', async () => {
    const s = await every('Replace');
    h.advance(MINUTE);
    await h.pass();
    const [first] = await h.runs(s.id);
    await h.db.stage.updateMany({ where: { pipelineId: BigInt(first!.pipelineId!) }, data: { status: 'Running' } });
    await h.db.pipeline.update({ where: { id: BigInt(first!.pipelineId!) }, data: { status: 'Running' } });
    h.advance(MINUTE);
    await h.pass();
    const runs = await h.runs(s.id);
    expect(runs[1]).toMatchObject({ status: 'Created', reason: `replaced:${first!.pipelineId}`, pipelineStatus: 'NotStarted' });
    const cancelled = await loadPipeline(h.db, first!.pipelineId!);
    expect(cancelled).toMatchObject({ status: 'Cancelled', finishedAt: h.clock.now });
    expect(cancelled!.stages.map((st) => [st.status, st.finishedAt])).toEqual([['Cancelled', h.clock.now]]);
  });

  it('cancels all of them under Allow-then-Replace and names the newest', async () => {
    const s = await every('Allow');
    for (let i = 0; i < 2; i++) {
      h.advance(MINUTE);
      await h.pass();
    }
    const created = (await h.runs(s.id)).map((r) => r.pipelineId!);
    await h.db.schedule.update({ where: { id: BigInt(s.id) }, data: { overlapPolicy: 'Replace' } });
    h.advance(MINUTE);
    await h.pass();
    const runs = await h.runs(s.id);
    expect(runs.map((r) => r.pipelineStatus)).toEqual(['Cancelled', 'Cancelled', 'NotStarted']);
    expect(runs[2]!.reason).toBe(`replaced:${Math.max(...created)}`);
  });
});

describe('Allow', () => {
  it('creates while earlier pipelines still run', async () => {
    const s = await every('Allow');
    for (let i = 0; i < 3; i++) {
      h.advance(MINUTE);
      await h.pass();
    }
    expect((await h.runs(s.id)).map((r) => [r.status, r.pipelineStatus])).toEqual([
      ['Created', 'NotStarted'],
      ['Created', 'NotStarted'],
      ['Created', 'NotStarted'],
    ]);
  });
});

describe('creation failure', () => {
  it('records the run as Failed with creation_failed and keeps the plan going', async () => {
    const s = await every('Allow');
    await h.db.schedule.update({
      where: { id: BigInt(s.id) },
      data: { definition: { name: 'x', stages: [{ stageName: 'a', stageHandlerName: 'h', input: 'x'.repeat(10), options: { dependsOn: ['nope'] } }] } },
    });
    h.advance(MINUTE);
    await h.pass();
    const [run] = await h.runs(s.id);
    expect(run).toMatchObject({ status: 'Failed', pipelineId: null });
    expect(run!.reason).toMatch(/^creation_failed: /);
    expect((await h.schedule(s.id)).nextTickAt).toEqual(new Date(s.nextTickAt!.getTime() + MINUTE));
  });

  it('a pipeline the database refuses fails only its own run, not the others of the batch', async () => {
    const good = await every('Allow');
    const bad = await every('Allow');
    // Passes the creation rules of planPipeline but not the column width of stages.name.
    await h.db.schedule.update({ where: { id: BigInt(bad.id) }, data: { definition: { name: 'x', stages: [{ stageName: 'n'.repeat(300), stageHandlerName: 'h' }] } } });
    h.advance(MINUTE);
    const summary = await h.pass();
    expect(summary.failed).toBe(0);
    expect((await h.runs(good.id)).map((r) => r.status)).toEqual(['Created']);
    const [run] = await h.runs(bad.id);
    expect(run).toMatchObject({ status: 'Failed', pipelineId: null });
    expect(run!.reason).toMatch(/^creation_failed: /);
    expect(await h.db.pipeline.count({ where: { scheduleId: BigInt(bad.id) } })).toBe(0);
    expect(h.logLines.some((l) => l.includes('a fire batch failed'))).toBe(true);
  });
});

describe('a tick fires at most once', () => {
  it('a tick that already has a run is not fired again, and the plan moves on', async () => {
    const s = await every('Allow');
    await h.db.scheduleRun.create({
      data: { scheduleId: BigInt(s.id), applicationId: h.applicationId, trigger: 'Scheduled', status: 'Skipped', scheduledFor: s.nextTickAt!, tick: s.nextTickAt!, reason: 'overlap' },
    });
    h.advance(MINUTE);
    const summary = await h.pass();
    expect(summary.ticks.already_fired).toBe(1);
    expect((await h.runs(s.id)).map((r) => r.status)).toEqual(['Skipped']);
    expect(await h.db.pipeline.count({ where: { scheduleId: BigInt(s.id) } })).toBe(0);
    expect((await h.schedule(s.id)).nextTickAt).toEqual(new Date(s.nextTickAt!.getTime() + MINUTE));
  });
});
