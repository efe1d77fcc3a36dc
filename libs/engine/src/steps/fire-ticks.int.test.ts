// Firing a schedule's ticks (addendum §14.5–§14.7), the one operation behind the scheduler's batches
// and guarded path, Queue promotion, trigger and backfill: what each way of calling it guarantees.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { createApplication, insertSchedule, loadPipeline, queryableOf, sqlOf, type Db, type DbOrTx, type ScheduleRecord } from '@po/db';
import { fireScheduleTicks, planDefinition, type ScheduleFire } from './fire-ticks.js';

let database: TestDatabase;
let db: Db;
let app: number;
const T = new Date('2030-06-01T12:00:00.000Z');
const MINUTE = 60_000;
const definition = { name: 'fired', stages: [{ stageName: 'work', stageHandlerName: 'worker', input: 'in' }] };

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  app = (await createApplication(db, 'fire-ticks')).id;
});
afterAll(async () => {
  await database?.drop();
});

let seq = 0;
async function schedule(overlapPolicy: string, stored: unknown = definition): Promise<ScheduleRecord> {
  return insertSchedule(db, {
    applicationId: app,
    name: `ticks-${++seq}`,
    now: T,
    kind: 'Interval',
    cronExpression: null,
    intervalSeconds: 60,
    runAt: null,
    timeZone: 'UTC',
    definition: stored,
    overlapPolicy,
    catchupPolicy: 'All',
    catchupMax: 10,
    jitterSeconds: 0,
    planAnchor: T,
    nextTickAt: T,
    nextRunAt: T,
    handledThrough: null,
  });
}

const fireOf = (s: ScheduleRecord, fire: Partial<ScheduleFire> = {}): ScheduleFire => ({
  schedule: s,
  rules: { policy: s.overlapPolicy as 'Skip', catchupMax: s.catchupMax },
  open: [],
  queued: 0,
  ticks: [{ trigger: 'Scheduled', tick: T }],
  definition: () => planDefinition(s, s.definition),
  ...fire,
});
const runsOf = async (s: ScheduleRecord) =>
  (await db.scheduleRun.findMany({ where: { scheduleId: BigInt(s.id) }, orderBy: { id: 'asc' } })).map((r) => ({
    trigger: r.trigger,
    status: r.status,
    reason: r.reason,
    pipelineId: r.pipelineId === null ? null : Number(r.pipelineId),
  }));
// The engine's cancel (POST cancel) is the services' to pass; this one only ends the pipeline, in the same transaction.
const cancelIn = (tx: DbOrTx) => async (pipelineId: number) => {
  await tx.pipeline.update({ where: { id: BigInt(pipelineId) }, data: { status: 'Cancelled', finishedAt: T } });
  return true;
};
const openPipeline = async (s: ScheduleRecord) =>
  Number((await db.pipeline.create({ data: { applicationId: app, name: 'open', traceId: 't', scheduleId: BigInt(s.id), status: 'Running' } })).id);

describe('isolated (the guarded path, trigger, backfill)', () => {
  it('a pipeline the database refuses makes the creating ticks Failed (creation_failed); what Replace cancelled before stays cancelled; the plan moves on', async () => {
    // Passes the creation rules of planPipeline but not the column width of stages.name.
    const s = await schedule('Replace', { name: 'x', stages: [{ stageName: 'n'.repeat(300), stageHandlerName: 'h' }] });
    const before = await openPipeline(s);
    const next = new Date(T.getTime() + 2 * MINUTE);
    const outcome = await db.$transaction((tx) =>
      fireScheduleTicks(
        queryableOf(tx),
        [fireOf(s, { open: [before], ticks: [{ trigger: 'Catchup', tick: T }, { trigger: 'Scheduled', tick: new Date(T.getTime() + MINUTE) }], plan: { planAnchor: T, nextTickAt: next, nextRunAt: next, handledThrough: null } })],
        { now: T, clock: () => T, cancel: cancelIn(tx), isolate: true },
      ),
    );
    expect(outcome.fired[0]!.ticks.map((t) => [t.outcome, t.cancelled])).toEqual([
      ['failed', [before]],
      ['failed', []],
    ]);
    const runs = await runsOf(s);
    expect(runs.map((r) => [r.trigger, r.status, r.pipelineId])).toEqual([
      ['Catchup', 'Failed', null],
      ['Scheduled', 'Failed', null],
    ]);
    for (const r of runs) expect(r.reason).toMatch(/^creation_failed: .*too long/);
    expect((await loadPipeline(db, before))!.status).toBe('Cancelled');
    expect(await db.pipeline.count({ where: { scheduleId: BigInt(s.id) } })).toBe(1);
    expect((await db.schedule.findUniqueOrThrow({ where: { id: BigInt(s.id) } })).nextRunAt).toEqual(next);
  });

  it('skipFired: a tick that already has its run is left alone; a Backfill run and a scheduled run of the same tick do not see each other', async () => {
    const s = await schedule('Allow');
    await db.scheduleRun.create({ data: { scheduleId: BigInt(s.id), applicationId: app, trigger: 'Scheduled', status: 'Skipped', reason: 'overlap', scheduledFor: T, tick: T } });
    const later = new Date(T.getTime() + MINUTE);
    await db.scheduleRun.create({ data: { scheduleId: BigInt(s.id), applicationId: app, trigger: 'Backfill', status: 'Created', scheduledFor: later, backfillTick: later } });
    const ticks = [
      { trigger: 'Scheduled' as const, tick: T },
      { trigger: 'Scheduled' as const, tick: later },
      { trigger: 'Backfill' as const, tick: T },
      { trigger: 'Backfill' as const, tick: later },
    ];
    const outcome = await db.$transaction((tx) => fireScheduleTicks(queryableOf(tx), [fireOf(s, { ticks })], { now: T, clock: () => T, isolate: true, skipFired: true }));
    expect(outcome.fired[0]!.ticks.map((t) => t.outcome)).toEqual(['already_fired', 'created', 'created', 'already_fired']);
    expect(await db.scheduleRun.count({ where: { scheduleId: BigInt(s.id) } })).toBe(4);
    const backfilled = await db.scheduleRun.findFirstOrThrow({ where: { scheduleId: BigInt(s.id), backfillTick: T } });
    expect(backfilled).toMatchObject({ trigger: 'Backfill', tick: null, scheduledFor: T, status: 'Created' });
  });

  it('a promoted tick gives its Queued run the pipeline, and records no run of its own', async () => {
    const s = await schedule('Queue');
    const queued = await db.scheduleRun.create({ data: { scheduleId: BigInt(s.id), applicationId: app, trigger: 'Catchup', status: 'Queued', reason: 'overlap', scheduledFor: T, tick: T } });
    const outcome = await db.$transaction((tx) =>
      fireScheduleTicks(queryableOf(tx), [fireOf(s, { queued: 1, ticks: [{ trigger: 'Catchup', tick: T, run: Number(queued.id) }] })], { now: T, clock: () => T, isolate: true, skipFired: true }),
    );
    const [tick] = outcome.fired[0]!.ticks;
    expect(tick).toMatchObject({ outcome: 'created', runId: Number(queued.id) });
    expect(await runsOf(s)).toEqual([{ trigger: 'Catchup', status: 'Created', reason: null, pipelineId: tick!.pipeline!.id }]);
  });
});

describe('set-based (the scheduler’s batches)', () => {
  it('without cancel, a schedule whose ticks would replace is deferred untouched; the others of the batch are written', async () => {
    const replace = await schedule('Replace');
    const allow = await schedule('Allow');
    await openPipeline(replace);
    const plan = { planAnchor: T, nextTickAt: null, nextRunAt: null, handledThrough: null };
    const outcome = await sqlOf(db).transaction((tx) =>
      fireScheduleTicks(tx, [fireOf(replace, { open: 1, plan }), fireOf(allow, { open: 0, plan })], { now: T, clock: () => T }),
    );
    expect(outcome.deferred.map((f) => f.schedule.id)).toEqual([replace.id]);
    expect(outcome.fired.map((f) => [f.fire.schedule.id, f.ticks.map((t) => t.outcome)])).toEqual([[allow.id, ['created']]]);
    expect(await runsOf(replace)).toEqual([]);
    expect((await db.schedule.findUniqueOrThrow({ where: { id: BigInt(replace.id) } })).nextRunAt).toEqual(T);
    expect((await runsOf(allow)).map((r) => r.status)).toEqual(['Created']);
  });
});
