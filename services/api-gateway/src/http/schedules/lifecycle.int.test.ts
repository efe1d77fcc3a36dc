// POST /schedules/{name}/pause, resume, archive and trigger (api-spec "Schedule statuses",
// "Errors"; addendum §3, §5.6, §5.7, §14.5, §14.7).
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  pipelineResponseSchema,
  problemDetailsSchema,
  scheduleRunSchema,
  scheduleSchema,
  type FieldError,
} from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE } from '@po/queues';

const T0 = new Date('2030-03-04T10:00:00.000Z');
let now = T0;
const at = (ms: number) => new Date(T0.getTime() + ms);
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
  schedule: compile(scheduleSchema, { normalise: false }),
  run: compile(scheduleRunSchema, { normalise: false }),
  pipeline: compile(pipelineResponseSchema, { normalise: false }),
  problem: compile(problemDetailsSchema, { normalise: false }),
};
function noErrors(checked: { ok: true } | { ok: false; errors: FieldError[] }) {
  expect(checked.ok ? [] : checked.errors).toEqual([]);
}
function expectSchedule(reply: Reply, status = 200) {
  expect(reply.status, reply.text).toBe(status);
  noErrors(shapes.schedule(reply.body));
  return reply.body;
}
function expectProblem(reply: Reply, status: number, code: string, fields?: string[]) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  noErrors(shapes.problem(reply.body));
  expect(reply.body).toMatchObject({
    status,
    code,
    type: `urn:problem-type:pipeline-orchestration:${code}`,
  });
  if (fields)
    expect((reply.body.errors as FieldError[]).map((e) => e.field).sort()).toEqual(
      [...fields].sort(),
    );
}

const definition = {
  name: 'export',
  stages: [
    { stageName: 'first', stageHandlerName: 'h1', input: 'original' },
    { stageName: 'second', stageHandlerName: 'h2', input: 'kept' },
  ],
};
let seq = 0;
async function create(
  body: Record<string, unknown> = { kind: 'Interval', intervalSeconds: 60 },
): Promise<{ name: string; id: number }> {
  const name = `life-${++seq}`;
  const reply = await gw.call('PUT', `/schedules/${name}`, { json: { definition, ...body } });
  expect(reply.status, reply.text).toBe(201);
  return { name, id: reply.body.id };
}
const post = (name: string, action: string, options: Parameters<Gateway['call']>[2] = {}) =>
  gw.call('POST', `/schedules/${name}/${action}`, options);
async function queueRuns(scheduleId: number, count: number) {
  for (let i = 0; i < count; i++) {
    await gw.db.scheduleRun.create({
      data: {
        scheduleId: BigInt(scheduleId),
        applicationId: gw.appA.id,
        trigger: 'Scheduled',
        status: 'Queued',
        reason: 'overlap',
        scheduledFor: at(i * 60_000),
        tick: at(i * 60_000),
      },
    });
  }
}
const runsOf = async (name: string) =>
  (await gw.call('GET', `/schedules/${name}/runs`)).body.items as {
    status: string;
    reason: string | null;
  }[];

describe('pause', () => {
  it('Active → Paused with nextRunAt null; Paused again → 200 unchanged; definition and history kept', async () => {
    now = T0;
    const { name } = await create();
    const paused = expectSchedule(await post(name, 'pause'));
    expect(paused).toMatchObject({
      status: 'Paused',
      nextRunAt: null,
      definitionVersion: 1,
      updatedAt: T0.toISOString(),
    });
    expect(paused.definition).toEqual(definition);
    now = at(5000);
    expect(expectSchedule(await post(name, 'pause'))).toEqual(paused);
  });

  it('turns Queued runs into Skipped (reason paused)', async () => {
    const { name, id } = await create({
      kind: 'Interval',
      intervalSeconds: 60,
      overlapPolicy: 'Queue',
    });
    await queueRuns(id, 2);
    expectSchedule(await post(name, 'pause'));
    expect(await runsOf(name)).toMatchObject([
      { status: 'Skipped', reason: 'paused' },
      { status: 'Skipped', reason: 'paused' },
    ]);
  });

  it('Archived → 409 schedule_archived; unknown → 404; no key → 401', async () => {
    const { name } = await create();
    expectSchedule(await post(name, 'archive'));
    expectProblem(await post(name, 'pause'), 409, 'schedule_archived');
    expectProblem(await post('no-such', 'pause'), 404, 'not_found');
    expectProblem(await post(name, 'pause', { key: null }), 401, 'unauthorized');
  });
});

describe('resume', () => {
  it('Paused → Active, re-planned from now, with no backlog whatever the catch-up policy', async () => {
    now = T0;
    const { name } = await create({ kind: 'Interval', intervalSeconds: 60, catchupPolicy: 'All' });
    expectSchedule(await post(name, 'pause'));
    now = at(3600_000 + 5000);
    const resumed = expectSchedule(await post(name, 'resume'));
    expect(resumed).toMatchObject({
      status: 'Active',
      nextRunAt: at(3600_000 + 65_000).toISOString(),
      updatedAt: T0.toISOString(),
    });
  });

  it('Active → 200 unchanged', async () => {
    now = T0;
    const { name } = await create();
    const before = expectSchedule(await gw.call('GET', `/schedules/${name}`));
    now = at(1000);
    expect(expectSchedule(await post(name, 'resume'))).toEqual(before);
  });

  it('a Once schedule whose runAt is past → 409 no_future_run, Active or Paused', async () => {
    now = T0;
    const active = await create({ kind: 'Once', runAt: at(60_000).toISOString() });
    const paused = await create({ kind: 'Once', runAt: at(60_000).toISOString() });
    expectSchedule(await post(paused.name, 'pause'));
    now = at(60_000);
    expectProblem(await post(active.name, 'resume'), 409, 'no_future_run');
    expectProblem(await post(paused.name, 'resume'), 409, 'no_future_run');
    expect(expectSchedule(await gw.call('GET', `/schedules/${paused.name}`)).status).toBe('Paused');
  });

  it('a Once schedule still in the future resumes to its runAt', async () => {
    now = T0;
    const { name } = await create({ kind: 'Once', runAt: at(3600_000).toISOString() });
    expectSchedule(await post(name, 'pause'));
    expect(expectSchedule(await post(name, 'resume'))).toMatchObject({
      status: 'Active',
      nextRunAt: at(3600_000).toISOString(),
    });
  });

  it('a stored schedule that can no longer be planned → 400 not_plannable, unchanged', async () => {
    now = T0;
    const { name, id } = await create({
      kind: 'Cron',
      cronExpression: '0 * * * *',
      timeZone: 'Europe/Berlin',
    });
    expectSchedule(await post(name, 'pause'));
    await gw.db.schedule.update({
      where: { id: BigInt(id) },
      data: { timeZone: 'Atlantis/Capital' },
    });
    expectProblem(await post(name, 'resume'), 400, 'not_plannable');
    expect(expectSchedule(await gw.call('GET', `/schedules/${name}`)).status).toBe('Paused');
  });

  it('Archived → 409 schedule_archived; unknown → 404', async () => {
    const { name } = await create();
    expectSchedule(await post(name, 'archive'));
    expectProblem(await post(name, 'resume'), 409, 'schedule_archived');
    expectProblem(await post('no-such', 'resume'), 404, 'not_found');
  });
});

describe('archive', () => {
  it('→ Archived, nextRunAt null, Queued runs Skipped (archived); again → 200 unchanged', async () => {
    now = T0;
    const { name, id } = await create({
      kind: 'Interval',
      intervalSeconds: 60,
      overlapPolicy: 'Queue',
    });
    await queueRuns(id, 1);
    const archived = expectSchedule(await post(name, 'archive'));
    expect(archived).toMatchObject({ status: 'Archived', nextRunAt: null });
    expect(await runsOf(name)).toMatchObject([{ status: 'Skipped', reason: 'archived' }]);
    expect(expectSchedule(await post(name, 'archive'))).toEqual(archived);
    expectProblem(await post('no-such', 'archive'), 404, 'not_found');
    expectProblem(await post(name, 'archive', { key: null }), 401, 'unauthorized');
  });

  it('an Archived schedule is still readable with its runs', async () => {
    const { name } = await create();
    expect((await post(name, 'trigger')).status).toBe(201);
    expectSchedule(await post(name, 'archive'));
    expect(expectSchedule(await gw.call('GET', `/schedules/${name}`)).status).toBe('Archived');
    expect(await runsOf(name)).toHaveLength(1);
  });
});

describe('trigger', () => {
  async function trigger(name: string, options: Parameters<Gateway['call']>[2] = {}) {
    const reply = await post(name, 'trigger', options);
    expect(reply.status, reply.text).toBe(201);
    noErrors(shapes.run(reply.body.run));
    noErrors(shapes.pipeline(reply.body.pipeline));
    return reply.body as {
      run: Record<string, unknown>;
      pipeline: { id: number; stages: { input: string }[] } & Record<string, unknown>;
    };
  }

  it('creates a Manual run (Created) and its pipeline; the plan is untouched (201)', async () => {
    now = T0;
    const { name, id } = await create();
    const before = expectSchedule(await gw.call('GET', `/schedules/${name}`));
    now = at(1234);
    const { run, pipeline } = await trigger(name);
    expect(run).toMatchObject({
      scheduleId: id,
      trigger: 'Manual',
      status: 'Created',
      scheduledFor: now.toISOString(),
      createdAt: now.toISOString(),
      pipelineId: pipeline.id,
      pipelineStatus: 'NotStarted',
      reason: null,
    });
    expect(pipeline).toMatchObject({
      name: 'export',
      status: 'NotStarted',
      applicationId: gw.appA.id,
      idempotencyKey: null,
      createdAt: now.toISOString(),
    });
    expect(pipeline.stages.map((s) => s.input)).toEqual(['original', 'kept']);
    const stored = await gw.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(pipeline.id) } });
    expect(Number(stored.scheduleId)).toBe(id);
    expect(stored.dispatchRequestedAt).not.toBeNull();
    const after = expectSchedule(await gw.call('GET', `/schedules/${name}`));
    expect(after).toMatchObject({
      nextRunAt: before.nextRunAt,
      updatedAt: before.updatedAt,
      lastRunAt: now.toISOString(),
      lastRunStatus: 'NotStarted',
      lastPipelineId: pipeline.id,
    });
    const jobs = await events.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed']);
    expect(
      jobs.some((j) => j.data.type === 'pipeline.created' && j.data.pipelineId === pipeline.id),
    ).toBe(true);
  });

  it.each([
    ['a string, used as is', { input: 'replacement' }, 'replacement'],
    ['an object, as compact JSON', { input: { b: [1, 2], a: 'x' } }, '{"b":[1,2],"a":"x"}'],
    ['a number', { input: 42 }, '42'],
    ['false', { input: false }, 'false'],
    ['null keeps the definition input', { input: null }, 'original'],
    ['omitted keeps it', { other: 1 }, 'original'],
  ])('replaces the first stage input with %s', async (_label, json, expected) => {
    const { name } = await create();
    const { pipeline } = await trigger(name, { json });
    expect(pipeline.stages.map((s) => s.input)).toEqual([expected, 'kept']);
  });

  it('accepts no body and an empty body', async () => {
    const { name } = await create();
    expect((await trigger(name, { raw: '' })).pipeline.stages[0]!.input).toBe('original');
    expect((await trigger(name)).pipeline.stages[0]!.input).toBe('original');
  });

  it('rejects a body that is not a JSON object (400 "") and an input over 262144 bytes (400 /input)', async () => {
    const { name } = await create();
    expectProblem(await post(name, 'trigger', { json: [1] }), 400, 'validation_failed', ['']);
    expectProblem(await post(name, 'trigger', { raw: '{"input":' }), 400, 'validation_failed', [
      '',
    ]);
    expectProblem(
      await post(name, 'trigger', { json: { input: 'é'.repeat(131_073) } }),
      400,
      'validation_failed',
      ['/input'],
    );
    expectProblem(
      await post(name, 'trigger', { json: { input: { v: 'x'.repeat(262_140) } } }),
      400,
      'validation_failed',
      ['/input'],
    );
    expect((await post(name, 'trigger', { json: { input: 'x'.repeat(262_144) } })).status).toBe(
      201,
    );
  });

  it('works on a Paused schedule; Archived → 409 schedule_archived; unknown → 404; no key → 401', async () => {
    const { name } = await create();
    expectSchedule(await post(name, 'pause'));
    await trigger(name);
    expect(expectSchedule(await gw.call('GET', `/schedules/${name}`))).toMatchObject({
      status: 'Paused',
      nextRunAt: null,
    });
    expectSchedule(await post(name, 'archive'));
    expectProblem(await post(name, 'trigger'), 409, 'schedule_archived');
    expectProblem(await post('no-such', 'trigger'), 404, 'not_found');
    expectProblem(await post(name, 'trigger', { key: null }), 401, 'unauthorized');
  });

  it('is not subject to overlap: a second trigger creates a second pipeline while the first runs', async () => {
    const { name } = await create({ kind: 'Interval', intervalSeconds: 60, overlapPolicy: 'Skip' });
    const first = await trigger(name);
    const second = await trigger(name);
    expect(second.pipeline.id).not.toBe(first.pipeline.id);
    expect(second.run.status).toBe('Created');
  });

  it('records a Failed run and answers 500 when the pipeline cannot be created', async () => {
    const { name, id } = await create();
    // A definition that no longer passes the creation rules (stored data edited behind the API's back).
    await gw.db.schedule.update({
      where: { id: BigInt(id) },
      data: {
        definition: {
          name: 'x',
          stages: [{ stageName: 'a', stageHandlerName: 'h', options: { dependsOn: ['missing'] } }],
        },
      },
    });
    expectProblem(await post(name, 'trigger'), 500, 'internal');
    const [run] = (await gw.call('GET', `/schedules/${name}/runs`)).body.items;
    expect(run).toMatchObject({
      trigger: 'Manual',
      status: 'Failed',
      pipelineId: null,
      pipelineStatus: null,
    });
    expect(run.reason).toMatch(/^creation_failed: /);
    const health = expectSchedule(await gw.call('GET', `/schedules/${name}`)).health;
    expect(health).toMatchObject({
      total: 1,
      failed: 1,
      state: 'failing',
      lastFailureAt: run.createdAt,
    });
  });
});
