// The scheduler's set-based fire statements (decision 0086): a whole batch — pipelines, stages,
// context items, keywords, runs and advanced plans — in one statement, ids increasing with position;
// the batch lock with SKIP LOCKED and small definitions inline; the overlap state in one read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPipeline, type NewPipeline, type PipelineDefinitionInput } from '@po/domain';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { createApplication, insertSchedule, loadPipeline, sqlOf, type Db, type ScheduleRecord } from '@po/db';
import {
  lockDueScheduleBatch,
  overlapStates,
  pipelineTemplate,
  scheduleDefinitionText,
  writeFiredBatch,
  type FiredRun,
  type ScheduledPipeline,
} from './fire.js';

let database: TestDatabase;
let db: Db;
let apps: number[];
const T = new Date('2030-06-01T12:00:00.000Z');

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  apps = [(await createApplication(db, 'fire-a')).id, (await createApplication(db, 'fire-b')).id];
});
afterAll(async () => {
  await database?.drop();
});

let seq = 0;
async function schedule(applicationId: number, definition: unknown, nextRunAt: Date | null = T, overlapPolicy = 'Skip'): Promise<ScheduleRecord> {
  return insertSchedule(db, {
    applicationId,
    name: `fire-${++seq}`,
    now: new Date(T.getTime() - 60_000),
    kind: 'Interval',
    cronExpression: null,
    intervalSeconds: 60,
    runAt: null,
    timeZone: 'UTC',
    definition,
    overlapPolicy,
    catchupPolicy: 'None',
    catchupMax: 10,
    jitterSeconds: 0,
    planAnchor: new Date(T.getTime() - 60_000),
    nextTickAt: nextRunAt,
    nextRunAt,
    handledThrough: null,
  });
}

const planned = (definition: PipelineDefinitionInput, applicationId: number, scheduleId: number): NewPipeline => {
  const result = planPipeline(definition, { applicationId, scheduleId });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.pipeline;
};
const spans = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${i}`.padEnd(16, '0').slice(0, 16)).join('');
const byId = (a: { id: bigint }, b: { id: bigint }) => (a.id < b.id ? -1 : 1);

describe('writeFiredBatch', () => {
  it('creates every pipeline of the batch with its own stages, context and keywords; ids increase with position; runs and plans land', async () => {
    const definitionA: PipelineDefinitionInput = {
      name: 'alpha',
      policies: [{ kind: 'audit' }],
      stages: [
        { stageName: 'fetch', stageHandlerName: 'fetcher', input: 'in-a1', description: 'first' },
        { stageName: 'store', stageHandlerName: 'storer', input: 'in-a2', options: { maxRetries: 3, dependsOn: ['fetch'] }, policies: [{ p: 1 }] },
      ],
      pipelineContextItems: [
        { key: 'region', value: 'eu' },
        { key: 'token', value: 's3cret', isSensitive: true, valueType: 'secret' },
        { key: 'region', value: 'us' }, // a repeated key keeps its last value at its first place
        { key: 'gone', isDeleted: true },
      ],
      pipelineKeywords: [
        { key: 'team', value: 'data' },
        { key: 'tier', value: 'gold' },
      ],
    };
    const definitionB: PipelineDefinitionInput = {
      name: 'beta',
      // A lone surrogate becomes U+FFFD, as in pipeline creation (jsonb refuses its escape).
      stages: [1, 2, 3].map((i) => ({ stageName: `b${i}`, stageHandlerName: 'bh', input: i === 3 ? 'in-b3\uD800!' : `in-b${i}`, isEvent: i === 2 })),
    };
    const sa = await schedule(apps[0]!, definitionA);
    const sb = await schedule(apps[1]!, { name: 'beta', stages: [{ stageName: 'b', stageHandlerName: 'bh' }] }); // jsonb stores no lone surrogate
    const templates = [pipelineTemplate(planned(definitionA, apps[0]!, sa.id)), pipelineTemplate(planned(definitionB, apps[1]!, sb.id))];
    // Two pipelines of schedule A (two ticks, one template), one of B in between.
    const pipelines: ScheduledPipeline[] = [
      { applicationId: apps[0]!, scheduleId: sa.id, traceId: 'a'.repeat(32), template: 0, spanIds: spans(2, 'a1') },
      { applicationId: apps[1]!, scheduleId: sb.id, traceId: 'b'.repeat(32), template: 1, spanIds: spans(3, 'b1') },
      { applicationId: apps[0]!, scheduleId: sa.id, traceId: 'c'.repeat(32), template: 0, spanIds: spans(2, 'a2') },
    ];
    const tick1 = new Date(T.getTime() - 60_000);
    const run = (s: ScheduleRecord, tick: Date, status: FiredRun['status'], pipeline: number | null, reason: string | null = null): FiredRun => ({
      scheduleId: s.id,
      applicationId: s.applicationId,
      trigger: 'Scheduled',
      status,
      scheduledFor: tick,
      tick,
      pipeline,
      reason,
      createdAt: T,
    });
    const runs = [run(sa, tick1, 'Created', 0), run(sb, T, 'Created', 1), run(sa, T, 'Created', 2), run(sb, tick1, 'Skipped', null, 'overlap')];
    const next = new Date(T.getTime() + 60_000);
    const plans = [sa, sb].map((s) => ({ scheduleId: s.id, planAnchor: T, nextTickAt: next, nextRunAt: next, handledThrough: null }));
    const now = new Date(T.getTime() + 7);

    const ids = await sqlOf(db).transaction((tx) => writeFiredBatch(tx, { now, templates, pipelines, runs, plans }));

    expect(ids).toHaveLength(3);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    const loaded = await Promise.all(ids.map(async (id) => (await loadPipeline(db, id))!));
    const [a1, b1, a2] = loaded;
    for (const [p, spec] of [
      [a1!, { app: apps[0], schedule: sa.id, name: 'alpha', trace: 'a'.repeat(32) }],
      [b1!, { app: apps[1], schedule: sb.id, name: 'beta', trace: 'b'.repeat(32) }],
      [a2!, { app: apps[0], schedule: sa.id, name: 'alpha', trace: 'c'.repeat(32) }],
    ] as const) {
      expect(p).toMatchObject({
        applicationId: spec.app,
        scheduleId: BigInt(spec.schedule),
        name: spec.name,
        traceId: spec.trace,
        status: 'NotStarted',
        dispatched: false,
        idempotencyKey: null,
        createdAt: now,
        updatedAt: now,
        dispatchRequestedAt: now,
        finishedAt: null,
      });
    }
    expect(a1!.policies).toEqual([{ kind: 'audit' }]);
    expect(b1!.policies).toBeNull();

    // Stages: each pipeline its own, in position order, with its own span ids.
    expect(a1!.stages.map((s) => [s.position, s.name, s.handlerName, s.input, s.description, s.spanId, s.applicationId])).toEqual([
      [0, 'fetch', 'fetcher', 'in-a1', 'first', spans(2, 'a1').slice(0, 16), apps[0]],
      [1, 'store', 'storer', 'in-a2', null, spans(2, 'a1').slice(16), apps[0]],
    ]);
    expect(a1!.stages[1]!.options).toMatchObject({ maxRetries: 3, dependsOn: ['fetch'], runNextIfFailed: false });
    expect(a1!.stages[1]!.policies).toEqual([{ p: 1 }]);
    expect(a1!.stages[0]!.policies).toBeNull();
    expect(a2!.stages.map((s) => s.spanId)).toEqual([spans(2, 'a2').slice(0, 16), spans(2, 'a2').slice(16)]);
    expect(b1!.stages.map((s) => [s.position, s.name, s.input, s.isEvent, s.applicationId])).toEqual([
      [0, 'b1', 'in-b1', false, apps[1]],
      [1, 'b2', 'in-b2', true, apps[1]],
      [2, 'b3', 'in-b3\uFFFD!', false, apps[1]],
    ]);
    for (const p of loaded) for (const s of p.stages) expect([s.status, s.createdAt]).toEqual(['NotStarted', now]);
    // Stage ids increase with (pipeline position, stage position) across the whole batch.
    const stageIds = loaded.flatMap((p) => p.stages.map((s) => s.id));
    expect([...stageIds].sort((x, y) => (x < y ? -1 : 1))).toEqual(stageIds);

    // Context: deduplicated by key (last value, first place), the sensitive flag kept, no tombstone.
    for (const p of [a1!, a2!]) {
      expect(p.contextItems.map((c) => [c.key, c.value, c.valueType, c.isSensitive])).toEqual([
        ['region', 'us', null, false],
        ['token', 's3cret', 'secret', true],
      ]);
      expect(p.keywords.map((k) => [k.key, k.value])).toEqual([
        ['team', 'data'],
        ['tier', 'gold'],
      ]);
    }
    expect(b1!.contextItems).toEqual([]);
    expect(b1!.keywords).toEqual([]);
    const contextIds = [...a1!.contextItems, ...a2!.contextItems].map((c) => c.id);
    expect([...contextIds].sort((x, y) => (x < y ? -1 : 1))).toEqual(contextIds);
    const keywordIds = [...a1!.keywords, ...a2!.keywords].map((k) => k.id);
    expect([...keywordIds].sort((x, y) => (x < y ? -1 : 1))).toEqual(keywordIds);

    // Runs in array order, each pointing at its pipeline.
    const stored = (await db.scheduleRun.findMany({ where: { scheduleId: { in: [BigInt(sa.id), BigInt(sb.id)] } } })).sort(byId);
    expect(stored.map((r) => [Number(r.scheduleId), r.applicationId, r.status, r.tick, r.pipelineId === null ? null : Number(r.pipelineId), r.reason, r.createdAt])).toEqual([
      [sa.id, apps[0], 'Created', tick1, ids[0], null, T],
      [sb.id, apps[1], 'Created', T, ids[1], null, T],
      [sa.id, apps[0], 'Created', T, ids[2], null, T],
      [sb.id, apps[1], 'Skipped', tick1, null, 'overlap', T],
    ]);

    // Plans advanced.
    for (const s of [sa, sb]) {
      expect(await db.schedule.findUniqueOrThrow({ where: { id: BigInt(s.id) } })).toMatchObject({ planAnchor: T, nextTickAt: next, nextRunAt: next, handledThrough: null });
    }
  });

  it('a tick that already has a run fails the whole write, and the transaction leaves nothing behind', async () => {
    const definition = { name: 'gamma', stages: [{ stageName: 'g', stageHandlerName: 'gh', input: 'x' }] };
    const s = await schedule(apps[0]!, definition);
    await db.scheduleRun.create({ data: { scheduleId: BigInt(s.id), applicationId: s.applicationId, trigger: 'Scheduled', status: 'Skipped', scheduledFor: T, tick: T } });
    const before = await db.pipeline.count();
    await expect(
      sqlOf(db).transaction((tx) =>
        writeFiredBatch(tx, {
          now: T,
          templates: [pipelineTemplate(planned(definition, s.applicationId, s.id))],
          pipelines: [{ applicationId: s.applicationId, scheduleId: s.id, traceId: 'd'.repeat(32), template: 0, spanIds: spans(1, 'g') }],
          runs: [{ scheduleId: s.id, applicationId: s.applicationId, trigger: 'Scheduled', status: 'Created', scheduledFor: T, tick: T, pipeline: 0, reason: null, createdAt: T }],
          plans: [{ scheduleId: s.id, planAnchor: T, nextTickAt: null, nextRunAt: null, handledThrough: null }],
        }),
      ),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await db.pipeline.count()).toBe(before);
    expect(await db.scheduleRun.count({ where: { scheduleId: BigInt(s.id) } })).toBe(1);
    expect((await db.schedule.findUniqueOrThrow({ where: { id: BigInt(s.id) } })).nextRunAt).toEqual(T);
  });

  it('writes runs and plans alone (nothing to create)', async () => {
    const s = await schedule(apps[1]!, { name: 'delta', stages: [{ stageName: 'd', stageHandlerName: 'dh' }] });
    const ids = await sqlOf(db).transaction((tx) =>
      writeFiredBatch(tx, {
        now: T,
        templates: [],
        pipelines: [],
        runs: [{ scheduleId: s.id, applicationId: s.applicationId, trigger: 'Catchup', status: 'Failed', scheduledFor: T, tick: T, pipeline: null, reason: 'creation_failed: x', createdAt: T }],
        plans: [{ scheduleId: s.id, planAnchor: T, nextTickAt: null, nextRunAt: null, handledThrough: null }],
      }),
    );
    expect(ids).toEqual([]);
    expect(await db.scheduleRun.findMany({ where: { scheduleId: BigInt(s.id) }, select: { trigger: true, status: true, reason: true, pipelineId: true } })).toEqual([
      { trigger: 'Catchup', status: 'Failed', reason: 'creation_failed: x', pipelineId: null },
    ]);
    expect((await db.schedule.findUniqueOrThrow({ where: { id: BigInt(s.id) } })).nextRunAt).toBeNull();
  });
});

describe('lockDueScheduleBatch', () => {
  it('locks due Active schedules earliest first, skips those another transaction holds, and inlines only small definitions', async () => {
    await db.schedule.updateMany({ data: { nextRunAt: null } });
    const small = { name: 'small', stages: [{ stageName: 's', stageHandlerName: 'h', input: 'tiny' }] };
    const large = { name: 'large', stages: [{ stageName: 's', stageHandlerName: 'h', input: 'y'.repeat(40_000) }] };
    const early = await schedule(apps[0]!, small, new Date(T.getTime() - 1000));
    const big = await schedule(apps[0]!, large, T);
    const held = await schedule(apps[1]!, small, T);
    const excluded = await schedule(apps[1]!, small, T);
    await schedule(apps[1]!, small, new Date(T.getTime() + 1)); // not due yet
    const paused = await schedule(apps[1]!, small, T);
    await db.schedule.update({ where: { id: BigInt(paused.id) }, data: { status: 'Paused' } });

    const sql = sqlOf(db);
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const other = sql.transaction(async (tx) => {
      await tx.query({ name: 'test_hold', text: 'SELECT id FROM schedules WHERE id = $1 FOR UPDATE' }, [held.id]);
      locked();
      await holding;
    });
    await isLocked;
    try {
      const rows = await sql.transaction((tx) => lockDueScheduleBatch(tx, T, { limit: 10, exclude: [excluded.id], inlineDefinitionBytes: 16_384 }));
      expect(rows.map((r) => r.schedule.id)).toEqual([early.id, big.id]);
      const [e, b] = rows;
      expect(e!.schedule).toMatchObject({ id: early.id, applicationId: apps[0], status: 'Active', kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Skip', nextRunAt: new Date(T.getTime() - 1000) });
      expect(JSON.parse(e!.definitionText!)).toEqual(small);
      expect(e!.definitionStoredBytes).toBeGreaterThan(0);
      expect(b!.definitionText).toBeNull();
      expect(JSON.parse((await sql.transaction((tx) => scheduleDefinitionText(tx, big.id)))!)).toEqual(large);
      // The limit takes the earliest.
      expect((await sql.transaction((tx) => lockDueScheduleBatch(tx, T, { limit: 1, inlineDefinitionBytes: 0 }))).map((r) => [r.schedule.id, r.definitionText])).toEqual([[early.id, null]]);
    } finally {
      release();
      await other;
    }
  });
});

describe('overlapStates', () => {
  it('counts each schedule’s unfinished pipelines and Queued runs, as its overlap policy needs them', async () => {
    const definition = { name: 'o', stages: [{ stageName: 'o', stageHandlerName: 'h' }] };
    const s1 = await schedule(apps[0]!, definition, null, 'Queue');
    const s2 = await schedule(apps[0]!, definition, null, 'Skip');
    const pipeline = (scheduleId: number, status: 'Running' | 'Completed' | 'NotStarted') =>
      db.pipeline.create({ data: { applicationId: apps[0]!, name: 'o', traceId: 't', scheduleId: BigInt(scheduleId), status } });
    await pipeline(s1.id, 'Running');
    await pipeline(s1.id, 'Completed');
    await pipeline(s1.id, 'NotStarted');
    for (const [i, status] of ['Queued', 'Queued', 'Skipped'].entries()) {
      await db.scheduleRun.create({ data: { scheduleId: BigInt(s1.id), applicationId: apps[0]!, trigger: 'Scheduled', status, scheduledFor: new Date(T.getTime() + i), tick: new Date(T.getTime() + i) } });
    }
    await pipeline(s2.id, 'Running');
    const states = await sqlOf(db).transaction((tx) => overlapStates(tx, [s1, s2]));
    expect(states.get(s1.id)).toEqual({ open: 2, queued: 2 });
    expect(states.get(s2.id)).toEqual({ open: 1, queued: 0 });
    // Allow never overlaps and Skip keeps no queue: neither is counted.
    const asAllow = await sqlOf(db).transaction((tx) => overlapStates(tx, [{ ...s1, overlapPolicy: 'Allow' }]));
    expect(asAllow.get(s1.id)).toEqual({ open: 0, queued: 0 });
  });
});
