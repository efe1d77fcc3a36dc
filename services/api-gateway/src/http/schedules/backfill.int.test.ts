// POST /schedules/{name}/backfill (issue 11, decision 0087): one Backfill run per tick of the
// schedule in [from, to), idempotent per tick, at most 1000 ticks, overlap tick by tick (addendum
// §14.5), the schedule's own plan untouched.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  problemDetailsSchema,
  scheduleBackfillResponseSchema,
  scheduleSchema,
  type FieldError,
} from '@po/contracts';
import { insertRun } from '@po/db';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE } from '@po/queues';

const T0 = new Date('2030-03-04T10:00:00.000Z');
let now = T0;
const at = (ms: number) => new Date(T0.getTime() + ms).toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;
let gw: Gateway;
let events: Queue;
beforeAll(async () => {
  gw = await startGateway({ clock: () => now });
  events = new Queue(PIPELINE_EVENTS_QUEUE, { connection: gw.redis, prefix: gw.prefix });
});
afterAll(async () => {
  await events?.close();
  await gw?.close();
});

const shapes = {
  backfill: compile(scheduleBackfillResponseSchema, { normalise: false }),
  schedule: compile(scheduleSchema, { normalise: false }),
  problem: compile(problemDetailsSchema, { normalise: false }),
};
function noErrors(checked: { ok: true } | { ok: false; errors: FieldError[] }) {
  expect(checked.ok ? [] : checked.errors).toEqual([]);
}
function expectProblem(reply: Reply, status: number, code: string, fields?: string[]) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  noErrors(shapes.problem(reply.body));
  expect(reply.body).toMatchObject({ status, code });
  if (fields) expect((reply.body.errors as FieldError[]).map((e) => e.field).sort()).toEqual([...fields].sort());
  return reply.body as { detail: string; errors?: FieldError[] };
}

interface Run {
  id: number;
  trigger: string;
  status: string;
  scheduledFor: string;
  createdAt: string;
  pipelineId: number | null;
  pipelineStatus: string | null;
  reason: string | null;
}
interface Backfill {
  ticks: number;
  created: number;
  runs: Run[];
}

const definition = {
  name: 'export',
  stages: [
    { stageName: 'first', stageHandlerName: 'h1', input: 'original' },
    { stageName: 'second', stageHandlerName: 'h2', input: 'kept' },
  ],
};
let seq = 0;
async function create(body: Record<string, unknown>): Promise<{ name: string; id: number }> {
  const name = `backfill-${++seq}`;
  const reply = await gw.call('PUT', `/schedules/${name}`, { json: { definition, ...body } });
  expect(reply.status, reply.text).toBe(201);
  return { name, id: reply.body.id };
}
const hourly = (extra: Record<string, unknown> = {}) => create({ kind: 'Cron', cronExpression: '0 * * * *', ...extra });
const call = (name: string, json: unknown, key?: string | null) =>
  gw.call('POST', `/schedules/${name}/backfill`, { json, ...(key === undefined ? {} : { key }) });
async function backfill(name: string, json: Record<string, unknown>): Promise<Backfill> {
  const reply = await call(name, json);
  expect(reply.status, reply.text).toBe(200);
  noErrors(shapes.backfill(reply.body));
  return reply.body as Backfill;
}
const runsOf = async (name: string): Promise<Run[]> => (await gw.call('GET', `/schedules/${name}/runs?limit=200`)).body.items;
const scheduleOf = async (name: string) => {
  const reply = await gw.call('GET', `/schedules/${name}`);
  noErrors(shapes.schedule(reply.body));
  return reply.body;
};
const planRow = (id: number) =>
  gw.db.schedule.findUniqueOrThrow({
    where: { id: BigInt(id) },
    select: { planAnchor: true, nextTickAt: true, nextRunAt: true, handledThrough: true, status: true, updatedAt: true },
  });
const statusesOf = (result: Backfill) => result.runs.map((r) => [r.scheduledFor, r.status, r.reason]);
const ticksOf = (result: Backfill) => result.runs.map((r) => r.scheduledFor);

describe('one Backfill run per tick of the range', () => {
  it('Cron: runs for the ticks in [from, to), trigger Backfill, scheduledFor the tick, listed in GET runs', async () => {
    now = T0;
    const { name, id } = await hourly({ overlapPolicy: 'Allow' });
    now = new Date(T0.getTime() + 1234);
    const result = await backfill(name, { from: at(-3 * HOUR), to: at(0) });
    expect(result.ticks).toBe(3);
    expect(result.created).toBe(3);
    expect(ticksOf(result)).toEqual([at(-3 * HOUR), at(-2 * HOUR), at(-HOUR)]);
    for (const run of result.runs) {
      expect(run).toMatchObject({ trigger: 'Backfill', status: 'Created', createdAt: now.toISOString(), pipelineStatus: 'NotStarted', reason: null });
      const pipeline = await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(run.pipelineId!) } });
      expect(Number(pipeline.scheduleId)).toBe(id);
      expect(pipeline.dispatchRequestedAt).not.toBeNull();
    }
    expect(result.runs.map((r) => r.id)).toEqual([...result.runs.map((r) => r.id)].sort((a, b) => a - b));
    expect(await runsOf(name)).toEqual([...result.runs].reverse().map((r) => ({ ...r, scheduleId: id })));
    const jobs = await events.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed']);
    const announced = new Set(jobs.filter((j) => j.data.type === 'pipeline.created').map((j) => j.data.pipelineId));
    for (const run of result.runs) expect(announced.has(run.pipelineId)).toBe(true);
  });

  it('Interval: ticks extend backwards from the anchor (anchor + k × interval, k ≤ 0)', async () => {
    now = new Date(T0.getTime() + 7000); // the anchor: 10:00:07
    const { name } = await create({ kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Allow' });
    now = new Date(T0.getTime() + 30_000);
    const result = await backfill(name, { from: at(-3 * MIN), to: at(7000) });
    expect(ticksOf(result)).toEqual([at(-3 * MIN + 7000), at(-2 * MIN + 7000), at(-MIN + 7000)]);
    // The range is [from, to): the anchor itself is in when to passes it.
    expect(ticksOf(await backfill(name, { from: at(-MIN), to: at(7001) }))).toEqual([at(-MIN + 7000), at(7000)]);
  });

  it('Once: its runAt when inside [from, to), nothing otherwise', async () => {
    now = T0;
    const { name } = await create({ kind: 'Once', runAt: at(HOUR) });
    expect(await backfill(name, { from: at(HOUR + 1), to: at(2 * HOUR) })).toEqual({ ticks: 0, created: 0, runs: [] });
    expect(await backfill(name, { from: at(0), to: at(HOUR) })).toEqual({ ticks: 0, created: 0, runs: [] });
    const inside = await backfill(name, { from: at(HOUR), to: at(HOUR + 1) });
    expect(statusesOf(inside)).toEqual([[at(HOUR), 'Created', null]]);
  });

  it('an empty range (from == to, or no tick inside) is a 200 with no runs', async () => {
    now = T0;
    const { name } = await create({ kind: 'Cron', cronExpression: '0 9 * * *' });
    expect(await backfill(name, { from: at(0), to: at(0) })).toEqual({ ticks: 0, created: 0, runs: [] });
    expect(await backfill(name, { from: at(0), to: at(20 * HOUR) })).toEqual({ ticks: 0, created: 0, runs: [] });
    expect(await runsOf(name)).toEqual([]);
  });

  it('replaces the first stage input of the pipelines it creates, as trigger does', async () => {
    now = T0;
    const { name } = await hourly({ overlapPolicy: 'Allow' });
    const result = await backfill(name, { from: at(-2 * HOUR), to: at(0), input: { day: 'x' } });
    for (const run of result.runs) {
      const stages = await gw.db.stage.findMany({ where: { pipelineId: BigInt(run.pipelineId!) }, orderBy: { position: 'asc' } });
      expect(stages.map((s) => s.input)).toEqual(['{"day":"x"}', 'kept']);
    }
  });
});

describe('DST inside the range (addendum §14.3)', () => {
  it('spring forward, Europe/Berlin 2030-03-31: 30 2 * * * fires once at 03:30 CEST; 0 * * * * has no extra tick', async () => {
    now = T0;
    const daily = await create({ kind: 'Cron', cronExpression: '30 2 * * *', timeZone: 'Europe/Berlin', overlapPolicy: 'Allow' });
    const days = await backfill(daily.name, { from: '2030-03-30T00:00:00Z', to: '2030-04-02T00:00:00Z' });
    expect(ticksOf(days)).toEqual(['2030-03-30T01:30:00.000Z', '2030-03-31T01:30:00.000Z', '2030-04-01T00:30:00.000Z']);
    const hourlyBerlin = await hourly({ timeZone: 'Europe/Berlin', overlapPolicy: 'Allow' });
    const hours = await backfill(hourlyBerlin.name, { from: '2030-03-31T00:00:00Z', to: '2030-03-31T03:00:00Z' });
    expect(ticksOf(hours)).toEqual(['2030-03-31T00:00:00.000Z', '2030-03-31T01:00:00.000Z', '2030-03-31T02:00:00.000Z']);
  });

  it('fall back, America/New_York 2030-11-03: 0 * * * * fires in both 01:00s; 30 1 * * * only at the first', async () => {
    now = T0;
    const hourlyNy = await hourly({ timeZone: 'America/New_York', overlapPolicy: 'Allow' });
    const hours = await backfill(hourlyNy.name, { from: '2030-11-03T04:00:00Z', to: '2030-11-03T08:00:00Z' });
    expect(ticksOf(hours)).toEqual([
      '2030-11-03T04:00:00.000Z', // 00:00 EDT
      '2030-11-03T05:00:00.000Z', // 01:00 EDT
      '2030-11-03T06:00:00.000Z', // 01:00 EST
      '2030-11-03T07:00:00.000Z', // 02:00 EST
    ]);
    const daily = await create({ kind: 'Cron', cronExpression: '30 1 * * *', timeZone: 'America/New_York', overlapPolicy: 'Allow' });
    const days = await backfill(daily.name, { from: '2030-11-03T00:00:00-04:00', to: '2030-11-05T00:00:00-05:00' });
    expect(ticksOf(days)).toEqual(['2030-11-03T05:30:00.000Z', '2030-11-04T06:30:00.000Z']);
  });
});

describe('the schedule’s own ticks are untouched', () => {
  it('a range in the future: its ticks run now with scheduledFor in the future; plan columns, nextRunAt and the tick stay', async () => {
    now = T0;
    const { name, id } = await hourly({ overlapPolicy: 'Allow' });
    const before = await planRow(id);
    const scheduleBefore = await scheduleOf(name);
    expect(scheduleBefore.nextRunAt).toBe(at(HOUR));
    now = new Date(T0.getTime() + 5000);
    const result = await backfill(name, { from: at(HOUR), to: at(3 * HOUR) });
    expect(statusesOf(result)).toEqual([
      [at(HOUR), 'Created', null],
      [at(2 * HOUR), 'Created', null],
    ]);
    expect(result.runs.every((r) => r.createdAt === now.toISOString())).toBe(true);
    expect(await planRow(id)).toEqual(before);
    expect(await scheduleOf(name)).toMatchObject({ nextRunAt: scheduleBefore.nextRunAt, updatedAt: scheduleBefore.updatedAt });
    // The scheduler claims a tick with a run whose `tick` is set (unique schedule_id, tick); the
    // Backfill run of 11:00 claimed nothing, so the schedule's own 11:00 still fires.
    const claim = await gw.db.$transaction((tx) =>
      insertRun(
        tx,
        { scheduleId: id, applicationId: gw.appA.id, trigger: 'Scheduled', status: 'Created', scheduledFor: new Date(at(HOUR)), tick: new Date(at(HOUR)), pipelineId: null, reason: null, createdAt: new Date(at(HOUR)) },
        { skipIfFired: true },
      ),
    );
    expect(claim).not.toBeNull();
  });

  it('a tick the scheduler already fired gets its Backfill run too (a backfill re-runs its range)', async () => {
    now = T0;
    const { name, id } = await hourly({ overlapPolicy: 'Allow' });
    await gw.db.scheduleRun.create({
      data: { scheduleId: BigInt(id), applicationId: gw.appA.id, trigger: 'Scheduled', status: 'Skipped', reason: 'overlap', scheduledFor: new Date(at(-HOUR)), tick: new Date(at(-HOUR)) },
    });
    const result = await backfill(name, { from: at(-HOUR), to: at(0) });
    expect(statusesOf(result)).toEqual([[at(-HOUR), 'Created', null]]);
    expect((await runsOf(name)).map((r) => r.trigger)).toEqual(['Backfill', 'Scheduled']);
  });
});

describe('idempotent per (schedule, tick)', () => {
  it('a second identical request creates nothing and answers the same runs', async () => {
    now = T0;
    const { name } = await hourly({ overlapPolicy: 'Allow' });
    const first = await backfill(name, { from: at(-4 * HOUR), to: at(0) });
    now = new Date(T0.getTime() + MIN);
    const second = await backfill(name, { from: at(-4 * HOUR), to: at(0) });
    expect(second).toEqual({ ...first, created: 0 });
    // A wider range creates only the ticks that have no Backfill run yet.
    const wider = await backfill(name, { from: at(-6 * HOUR), to: at(0) });
    expect(wider).toMatchObject({ ticks: 6, created: 2 });
    expect(wider.runs.slice(2)).toEqual(first.runs);
    expect(await runsOf(name)).toHaveLength(6);
  });

  it('two concurrent identical requests create exactly one run per tick between them', async () => {
    now = T0;
    const { name, id } = await hourly({ overlapPolicy: 'Allow' });
    const body = { from: at(-10 * HOUR), to: at(0) };
    const [a, b] = await Promise.all([call(name, body), call(name, body)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.body.created, b.body.created].sort()).toEqual([0, 10]);
    expect(a.body.runs).toEqual(b.body.runs);
    expect(await gw.db.scheduleRun.count({ where: { scheduleId: BigInt(id), trigger: 'Backfill' } })).toBe(10);
    expect(await gw.db.pipeline.count({ where: { scheduleId: BigInt(id) } })).toBe(10);
  });
});

describe('at most 1000 ticks per request', () => {
  it('exactly 1000 ticks are accepted; 1001 → 400 at /to with the count', async () => {
    now = T0;
    const { name } = await create({ kind: 'Cron', cronExpression: '* * * * *' });
    const tooMany = expectProblem(await call(name, { from: at(-1001 * MIN), to: at(0) }), 400, 'validation_failed', ['/to']);
    expect(tooMany.errors?.[0]?.message).toContain('holds 1001 ticks');
    expect(tooMany.detail).toContain('1001');
    expect(await runsOf(name)).toEqual([]);
    const result = await backfill(name, { from: at(-1000 * MIN), to: at(0) });
    expect(result).toMatchObject({ ticks: 1000, created: 1000 });
    expect(result.runs).toHaveLength(1000);
  });

  it('a huge range is counted (Interval: exactly) or bounded (Cron: "at least"), without walking it all', async () => {
    now = T0;
    const interval = await create({ kind: 'Interval', intervalSeconds: 10 });
    const year = expectProblem(await call(interval.name, { from: '2029-01-01T00:00:00Z', to: '2030-01-01T00:00:00Z' }), 400, 'validation_failed', ['/to']);
    expect(year.errors?.[0]?.message).toContain('holds 3153600 ticks');
    const minutes = await create({ kind: 'Cron', cronExpression: '* * * * *', timeZone: 'Europe/Berlin' });
    const started = Date.now();
    const all = expectProblem(await call(minutes.name, { from: '0001-01-01T00:00:00Z', to: '9999-12-31T23:59:59.999Z' }), 400, 'validation_failed', ['/to']);
    expect(all.errors?.[0]?.message).toContain('holds at least 100000 ticks');
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('validation, state and tenancy', () => {
  it('from and to are required RFC 3339 date-times; to before from → 400 at /to', async () => {
    const { name } = await hourly();
    expectProblem(await call(name, {}), 400, 'validation_failed', ['/from', '/to']);
    expectProblem(await call(name, { from: '2030-03-04T10:00:00', to: 'tomorrow', overlapPolicy: 'skip' }), 400, 'validation_failed', ['/from', '/overlapPolicy', '/to']);
    expectProblem(await call(name, { from: '0000-12-31T00:00:00Z', to: at(0) }), 400, 'validation_failed', ['/from']);
    expectProblem(await call(name, { from: at(1), to: at(0) }), 400, 'validation_failed', ['/to']);
    expectProblem(await call(name, [1]), 400, 'validation_failed', ['']);
    expectProblem(await gw.call('POST', `/schedules/${name}/backfill`, { raw: '' }), 400, 'validation_failed', ['']);
    expectProblem(await call(name, { from: at(0), to: at(HOUR), input: 'x'.repeat(262_145) }), 400, 'validation_failed', ['/input']);
    expectProblem(await gw.call('POST', `/schedules/${name}/backfill`, { raw: `{"input":"${'x'.repeat(600_000)}"}` }), 413, 'payload_too_large');
  });

  it('Archived → 409 schedule_archived; Paused is allowed and stays Paused', async () => {
    now = T0;
    const archived = await hourly();
    expect((await gw.call('POST', `/schedules/${archived.name}/archive`)).status).toBe(200);
    expectProblem(await call(archived.name, { from: at(-HOUR), to: at(0) }), 409, 'schedule_archived');
    const paused = await hourly();
    expect((await gw.call('POST', `/schedules/${paused.name}/pause`)).status).toBe(200);
    expect(statusesOf(await backfill(paused.name, { from: at(-HOUR), to: at(0) }))).toEqual([[at(-HOUR), 'Created', null]]);
    expect(await scheduleOf(paused.name)).toMatchObject({ status: 'Paused', nextRunAt: null });
  });

  it('unknown name → 404; another application’s key → 404; no key → 401', async () => {
    const { name } = await hourly();
    const body = { from: at(-HOUR), to: at(0) };
    expectProblem(await call('no-such', body), 404, 'not_found');
    expectProblem(await call(name, body, gw.appB.key), 404, 'not_found');
    expectProblem(await call(name, body, null), 401, 'unauthorized');
    expect(await runsOf(name)).toEqual([]);
  });

  it('a definition that no longer creates a pipeline → Failed runs (creation_failed), 200', async () => {
    now = T0;
    const { name, id } = await hourly({ overlapPolicy: 'Allow' });
    await gw.db.schedule.update({
      where: { id: BigInt(id) },
      data: { definition: { name: 'x', stages: [{ stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['missing'] } }] } },
    });
    const result = await backfill(name, { from: at(-2 * HOUR), to: at(0) });
    expect(result.runs.map((r) => [r.status, r.pipelineId])).toEqual([
      ['Failed', null],
      ['Failed', null],
    ]);
    expect(result.runs[0]!.reason).toMatch(/^creation_failed: /);
  });
});

describe('overlap, tick by tick in tick order (addendum §14.5)', () => {
  const range = { from: at(-4 * HOUR), to: at(0) };

  it('default: the schedule’s policy (Skip): the first tick creates, the rest are Skipped while it is unfinished', async () => {
    now = T0;
    const { name } = await hourly();
    const result = await backfill(name, range);
    expect(result.runs.map((r) => [r.status, r.reason])).toEqual([
      ['Created', null],
      ['Skipped', 'overlap'],
      ['Skipped', 'overlap'],
      ['Skipped', 'overlap'],
    ]);
    expect(result.created).toBe(4);
    // Any unfinished pipeline of the schedule overlaps, a manual one too.
    const other = await hourly();
    expect((await gw.call('POST', `/schedules/${other.name}/trigger`)).status).toBe(201);
    expect((await backfill(other.name, range)).runs.every((r) => r.status === 'Skipped')).toBe(true);
  });

  it('overlapPolicy Allow overrides it: every tick creates', async () => {
    const { name } = await hourly({ overlapPolicy: 'Skip' });
    const result = await backfill(name, { ...range, overlapPolicy: 'Allow' });
    expect(result.runs.map((r) => r.status)).toEqual(['Created', 'Created', 'Created', 'Created']);
    expect((await scheduleOf(name)).overlapPolicy).toBe('Skip');
  });

  it('Queue: Queued while fewer than catchupMax are, then Skipped queue_full; with input → 400', async () => {
    const { name } = await hourly({ overlapPolicy: 'Queue', catchupMax: 2 });
    expect((await backfill(name, range)).runs.map((r) => [r.status, r.reason])).toEqual([
      ['Created', null],
      ['Queued', 'overlap'],
      ['Queued', 'overlap'],
      ['Skipped', 'queue_full'],
    ]);
    expectProblem(await call(name, { ...range, input: 'x' }), 400, 'validation_failed', ['/input']);
    expect((await call(name, { ...range, input: 'x', overlapPolicy: 'Allow' })).status).toBe(200);
  });

  it('Queue on a Paused schedule skips (paused): a Paused schedule holds no Queued runs', async () => {
    const { name } = await hourly({ overlapPolicy: 'Queue' });
    expect((await gw.call('POST', `/schedules/${name}/pause`)).status).toBe(200);
    expect((await backfill(name, { from: at(-2 * HOUR), to: at(0) })).runs.map((r) => [r.status, r.reason])).toEqual([
      ['Created', null],
      ['Skipped', 'paused'],
    ]);
  });

  it('Replace: each tick cancels the unfinished pipelines as POST cancel does, reason replaced:{id}', async () => {
    const { name } = await hourly({ overlapPolicy: 'Replace' });
    const result = await backfill(name, { from: at(-3 * HOUR), to: at(0) });
    const [a, b, c] = result.runs;
    expect(result.runs.map((r) => r.status)).toEqual(['Created', 'Created', 'Created']);
    expect([a!.reason, b!.reason, c!.reason]).toEqual([null, `replaced:${a!.pipelineId}`, `replaced:${b!.pipelineId}`]);
    expect([a!.pipelineStatus, b!.pipelineStatus, c!.pipelineStatus]).toEqual(['Cancelled', 'Cancelled', 'NotStarted']);
    const jobs = await events.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed']);
    const cancelled = jobs.filter((j) => j.data.type === 'pipeline.cancelled').map((j) => j.data.pipelineId);
    expect(cancelled).toEqual(expect.arrayContaining([a!.pipelineId, b!.pipelineId]));
  });
});
