// GET /pipelines/{pipelineId}, POST /pipelines/{pipelineId}/cancel and
// POST /pipelines/{pipelineId}/stages (api-spec "Pipelines", "States and transitions"; addendum §1,
// §4, §6, §8).
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '@po/testing';
import {
  appendStagesResponseSchema,
  compile,
  pipelineResponseSchema,
  type FieldError,
  type JsonSchema,
} from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE } from '@po/queues';

let gw: Gateway;
let events: Queue;
beforeAll(async () => {
  gw = await startGateway();
  events = new Queue(PIPELINE_EVENTS_QUEUE, { connection: gw.redis, prefix: gw.prefix });
});
afterAll(async () => {
  await events?.close();
  await gw?.close();
});

function shapeErrors(schema: JsonSchema, body: unknown): FieldError[] {
  const checked = compile(schema, { normalise: false })(body);
  return checked.ok ? [] : checked.errors;
}
function expectJson(reply: Reply, status: number, schema: JsonSchema) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(shapeErrors(schema, reply.body)).toEqual([]);
  return reply.body;
}

async function eventsFor(pipelineId: number) {
  const jobs = await events.getJobs([
    'waiting',
    'delayed',
    'active',
    'completed',
    'failed',
    'prioritized',
  ]);
  return jobs
    .map(
      (j) =>
        j.data as { type: string; pipelineId: number; applicationId: number; stageIds?: number[] },
    )
    .filter((e) => e.pipelineId === pipelineId);
}

const stage = (stageName: string, extra: Record<string, unknown> = {}) => ({
  stageName,
  stageHandlerName: 'handler',
  ...extra,
});

async function createPipeline(
  key: string,
  stageNames = ['extract', 'load'],
): Promise<{ id: number; stages: { id: number }[] }> {
  const reply = await gw.call('POST', '/pipelines', {
    json: { apiKey: key, name: 'read-cancel-append', stages: stageNames.map((n) => stage(n)) },
    key: null,
  });
  expect(reply.status, reply.text).toBe(200);
  return reply.body;
}

const BAD_IDS = ['0', '01', '-1', 'abc', '1.5', '9007199254740992', '99999999999999999999'];

describe('GET /pipelines/{pipelineId}', () => {
  it('returns the pipeline with its stages in position order (200 PipelineResponse)', async () => {
    const created = await createPipeline(gw.appA.key, ['a', 'b', 'c']);
    const body = expectJson(
      await gw.call('GET', `/pipelines/${created.id}`),
      200,
      pipelineResponseSchema,
    );
    expect(body).toMatchObject({
      id: created.id,
      applicationId: gw.appA.id,
      status: 'NotStarted',
      stageStatuses: ['NotStarted', 'NotStarted', 'NotStarted'],
    });
    expect(body.stages.map((s: { name: string }) => s.name)).toEqual(['a', 'b', 'c']);
    const ids = body.stages.map((s: { id: number }) => s.id);
    expect(ids).toEqual([...ids].sort((x: number, y: number) => x - y));
    expect(body.stages.map((s: { nextStageId: number | null }) => s.nextStageId)).toEqual([
      ids[1],
      ids[2],
      null,
    ]);
  });

  it.each(BAD_IDS)('an invalid id (%s) is a 400 at pipelineId', async (id) => {
    expectProblem(await gw.call('GET', `/pipelines/${id}`), 400, 'validation_failed', [
      'pipelineId',
    ]);
  });

  it('a pipeline of another application is a 403', async () => {
    const other = await createPipeline(gw.appB.key);
    expectProblem(await gw.call('GET', `/pipelines/${other.id}`), 403, 'forbidden');
  });

  it.each(['9007199254740991', '123456789'])('an unknown pipeline (%s) is a 404', async (id) => {
    expectProblem(await gw.call('GET', `/pipelines/${id}`), 404, 'not_found');
  });
});

describe('POST /pipelines/{pipelineId}/cancel', () => {
  it('cancels the pipeline and every unfinished stage, with finishedAt (200 PipelineResponse)', async () => {
    const created = await createPipeline(gw.appA.key, ['done', 'waiting', 'running', 'todo']);
    const [done, waiting, running] = created.stages;
    const finishedEarlier = new Date('2025-01-01T00:00:00.000Z');
    await gw.db.stage.update({
      where: { id: BigInt(done!.id) },
      data: { status: 'Completed', finishedAt: finishedEarlier },
    });
    await gw.db.stage.update({
      where: { id: BigInt(waiting!.id) },
      data: { status: 'WaitingForApproval' },
    });
    await gw.db.stage.update({ where: { id: BigInt(running!.id) }, data: { status: 'Running' } });
    await gw.db.pipeline.update({ where: { id: BigInt(created.id) }, data: { status: 'Running' } });

    const before = Date.now();
    const body = expectJson(
      await gw.call('POST', `/pipelines/${created.id}/cancel`),
      200,
      pipelineResponseSchema,
    );
    expect(body).toMatchObject({ id: created.id, status: 'Cancelled', isTerminal: true });
    expect(Date.parse(body.finishedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(body.stageStatuses).toEqual(['Completed', 'Cancelled', 'Cancelled', 'Cancelled']);
    expect(body.stages[0].finishedAt).toBe(finishedEarlier.toISOString());
    for (const s of body.stages.slice(1)) {
      expect(s).toMatchObject({ status: 'Cancelled', isTerminal: true });
      expect(s.finishedAt).not.toBeNull();
    }
    // The read agrees with the cancel answer.
    expect((await gw.call('GET', `/pipelines/${created.id}`)).body).toEqual(body);
  });

  it('publishes pipeline.cancelled', async () => {
    const created = await createPipeline(gw.appA.key);
    await gw.call('POST', `/pipelines/${created.id}/cancel`);
    expect((await eventsFor(created.id)).filter((e) => e.type === 'pipeline.cancelled')).toEqual([
      expect.objectContaining({
        type: 'pipeline.cancelled',
        applicationId: gw.appA.id,
        pipelineId: created.id,
      }),
    ]);
  });

  it('a terminal pipeline (Cancelled, Completed or Failed) is a 409 pipeline_terminal and stays unchanged', async () => {
    const cancelled = await createPipeline(gw.appA.key);
    expect((await gw.call('POST', `/pipelines/${cancelled.id}/cancel`)).status).toBe(200);
    expectProblem(
      await gw.call('POST', `/pipelines/${cancelled.id}/cancel`),
      409,
      'pipeline_terminal',
    );
    for (const status of ['Completed', 'Failed'] as const) {
      const p = await createPipeline(gw.appA.key);
      await gw.db.pipeline.update({
        where: { id: BigInt(p.id) },
        data: { status, finishedAt: new Date() },
      });
      expectProblem(await gw.call('POST', `/pipelines/${p.id}/cancel`), 409, 'pipeline_terminal');
      const read = (await gw.call('GET', `/pipelines/${p.id}`)).body;
      expect(read.status).toBe(status);
      expect(read.stageStatuses).toEqual(['NotStarted', 'NotStarted']);
    }
    // No announcement for a refused cancel.
    expect(
      (await eventsFor(cancelled.id)).filter((e) => e.type === 'pipeline.cancelled'),
    ).toHaveLength(1);
  });

  it("another application's pipeline is a 404 and stays unchanged", async () => {
    const other = await createPipeline(gw.appB.key);
    expectProblem(await gw.call('POST', `/pipelines/${other.id}/cancel`), 404, 'not_found');
    expect((await gw.call('GET', `/pipelines/${other.id}`, { key: gw.appB.key })).body.status).toBe(
      'NotStarted',
    );
  });

  it('an unknown pipeline is a 404; an invalid id is a 400 at pipelineId', async () => {
    expectProblem(await gw.call('POST', '/pipelines/9007199254740991/cancel'), 404, 'not_found');
    for (const id of BAD_IDS)
      expectProblem(await gw.call('POST', `/pipelines/${id}/cancel`), 400, 'validation_failed', [
        'pipelineId',
      ]);
  });

  it('a cancellation that cannot get the pipeline within CANCEL_TIMEOUT_SECONDS is a 504 cancellation_timeout', async () => {
    const slow = await startGateway({ cancelTimeoutSeconds: 1 });
    try {
      const reply = await slow.call('POST', '/pipelines', {
        json: { apiKey: slow.appA.key, name: 'locked', stages: [stage('s')] },
        key: null,
      });
      const id = reply.body.id as number;
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holder = slow.db.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT id FROM pipelines WHERE id = ${BigInt(id)} FOR UPDATE`;
          locked();
          await released;
        },
        { timeout: 10_000 },
      );
      await isLocked;
      const started = Date.now();
      const cancel = await slow.call('POST', `/pipelines/${id}/cancel`);
      release();
      await holder;
      expectProblem(cancel, 504, 'cancellation_timeout');
      expect(Date.now() - started).toBeLessThan(5000);
      // Nothing was cancelled.
      expect((await slow.call('GET', `/pipelines/${id}`)).body.status).toBe('NotStarted');
    } finally {
      await slow.close();
    }
  });
});

describe('POST /pipelines/{pipelineId}/stages', () => {
  const append = (id: number, stages: unknown[], key?: string) =>
    gw.call('POST', `/pipelines/${id}/stages`, { json: { stages }, ...(key ? { key } : {}) });

  it('appends at the end and returns StageDtos with status NotStarted (200 AppendStagesResponse)', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    const body = expectJson(
      await append(created.id, [stage('two'), stage('three', { isEvent: true })]),
      200,
      appendStagesResponseSchema,
    );
    expect(body.stages).toHaveLength(2);
    const [two, three] = body.stages;
    expect(two).toMatchObject({
      pipelineId: created.id,
      name: 'two',
      stageHandlerName: 'handler',
      status: 'NotStarted',
      isSkipped: false,
      isEvent: false,
      nextStageId: three.id,
      finishedAt: null,
      startedAt: null,
    });
    expect(three).toMatchObject({
      name: 'three',
      status: 'NotStarted',
      isEvent: true,
      nextStageId: null,
    });
    expect(two.id).toBeGreaterThan(created.stages[0]!.id);
    expect(three.id).toBeGreaterThan(two.id);
    const read = (await gw.call('GET', `/pipelines/${created.id}`)).body;
    expect(read.stages.map((s: { id: number }) => s.id)).toEqual([
      created.stages[0]!.id,
      two.id,
      three.id,
    ]);
    expect(read.stages[0].nextStageId).toBe(two.id);
    expect(read.isEvent).toBe(true);
  });

  it('publishes stages.appended with the new stage ids', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    const body = (await append(created.id, [stage('two'), stage('three')])).body;
    const appended = (await eventsFor(created.id)).filter((e) => e.type === 'stages.appended');
    expect(appended).toEqual([
      expect.objectContaining({
        applicationId: gw.appA.id,
        pipelineId: created.id,
        stageIds: body.stages.map((s: { id: number }) => s.id),
      }),
    ]);
  });

  it('unwraps input: an object becomes compact JSON, a string is kept, null or omitted becomes ""', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    const raw = `{"stages":[
      {"stageName":"object","stageHandlerName":"h","input": { "a" : 1, "b" : [ 1, 2 ], "c" : { "d" : null } }},
      {"stageName":"string","stageHandlerName":"h","input":"{ \\"kept\\" : true }"},
      {"stageName":"null","stageHandlerName":"h","input":null},
      {"stageName":"omitted","stageHandlerName":"h"},
      {"stageName":"number","stageHandlerName":"h","input":42},
      {"stageName":"boolean","stageHandlerName":"h","input":false},
      {"stageName":"array","stageHandlerName":"h","input":[ 1, "x" ]}
    ]}`;
    const body = expectJson(
      await gw.call('POST', `/pipelines/${created.id}/stages`, {
        raw,
        headers: { 'content-type': 'application/json' },
      }),
      200,
      appendStagesResponseSchema,
    );
    const expected = [
      '{"a":1,"b":[1,2],"c":{"d":null}}',
      '{ "kept" : true }',
      '',
      '',
      '42',
      'false',
      '[1,"x"]',
    ];
    expect(body.stages.map((s: { input: string }) => s.input)).toEqual(expected);
    const read = (await gw.call('GET', `/pipelines/${created.id}`)).body;
    expect(read.stages.slice(1).map((s: { input: string }) => s.input)).toEqual(expected);
  });

  it('continuation precedence: options.runNextIfFailed over runNextIfCurrentFailed over runNextIfFailed', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    const cases = [
      {
        given: {
          options: { runNextIfFailed: false },
          runNextIfCurrentFailed: true,
          runNextIfFailed: true,
        },
        effective: false,
      },
      {
        given: {
          options: { runNextIfFailed: true },
          runNextIfCurrentFailed: false,
          runNextIfFailed: false,
        },
        effective: true,
      },
      { given: { runNextIfCurrentFailed: false, runNextIfFailed: true }, effective: false },
      { given: { runNextIfCurrentFailed: true, runNextIfFailed: false }, effective: true },
      { given: { runNextIfFailed: true }, effective: true },
      {
        given: {
          options: { runNextIfFailed: null },
          runNextIfCurrentFailed: null,
          runNextIfFailed: true,
        },
        effective: true,
      },
      { given: {}, effective: false },
    ];
    const body = expectJson(
      await append(
        created.id,
        cases.map((c, i) => stage(`case${i}`, c.given)),
      ),
      200,
      appendStagesResponseSchema,
    );
    const effective = cases.map((c) => c.effective);
    expect(
      body.stages.map((s: { runNextIfCurrentFailed: boolean }) => s.runNextIfCurrentFailed),
    ).toEqual(effective);
    // The effective value is what is stored as options.runNextIfFailed.
    const read = (await gw.call('GET', `/pipelines/${created.id}`)).body;
    expect(
      read.stages
        .slice(1)
        .map((s: { options: { runNextIfFailed: boolean } }) => s.options.runNextIfFailed),
    ).toEqual(effective);
  });

  it('ignores the stageId and pipelineId members: the URL chooses the pipeline', async () => {
    const target = await createPipeline(gw.appA.key, ['one']);
    const elsewhere = await createPipeline(gw.appA.key, ['one']);
    const body = expectJson(
      await append(target.id, [stage('two', { stageId: 0, pipelineId: elsewhere.id })]),
      200,
      appendStagesResponseSchema,
    );
    expect(body.stages[0].pipelineId).toBe(target.id);
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(target.id) } })).toBe(2);
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(elsewhere.id) } })).toBe(1);
  });

  it('dependsOn may name an existing stage or an earlier item of the same request', async () => {
    const created = await createPipeline(gw.appA.key, ['extract', 'load']);
    const reply = await append(created.id, [
      stage('report', { options: { dependsOn: ['load', 'extract'] } }),
      stage('mail', { options: { dependsOn: ['report'] } }),
    ]);
    expectJson(reply, 200, appendStagesResponseSchema);
    const read = (await gw.call('GET', `/pipelines/${created.id}`)).body;
    expect(read.stages[2].options.dependsOn).toEqual(['load', 'extract']);
    expect(read.stages[3].options.dependsOn).toEqual(['report']);
  });

  it('a dependsOn name that matches no earlier stage is a 400 at /stages/{i}/options/dependsOn/{j}, and nothing is appended', async () => {
    const created = await createPipeline(gw.appA.key, ['extract']);
    const reply = await append(created.id, [
      stage('a', { options: { dependsOn: ['b'] } }), // b comes later: not earlier in position
      stage('b', { options: { dependsOn: ['extract', 'nope'] } }),
    ]);
    expectProblem(reply, 400, 'validation_failed', [
      '/stages/0/options/dependsOn/0',
      '/stages/1/options/dependsOn/1',
    ]);
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(created.id) } })).toBe(1);
  });

  it('the pipeline status is unchanged by the append', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    await gw.db.stage.update({
      where: { id: BigInt(created.stages[0]!.id) },
      data: { status: 'WaitingForApproval' },
    });
    await gw.db.pipeline.update({ where: { id: BigInt(created.id) }, data: { status: 'Paused' } });
    expect((await append(created.id, [stage('two')])).status).toBe(200);
    const read = (await gw.call('GET', `/pipelines/${created.id}`)).body;
    expect(read.status).toBe('Paused');
    expect(read.stageStatuses).toEqual(['WaitingForApproval', 'NotStarted']);
  });

  it('a terminal pipeline is a 409 pipeline_terminal and nothing is appended', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    await gw.call('POST', `/pipelines/${created.id}/cancel`);
    expectProblem(await append(created.id, [stage('two')]), 409, 'pipeline_terminal');
    const completed = await createPipeline(gw.appA.key, ['one']);
    await gw.db.pipeline.update({
      where: { id: BigInt(completed.id) },
      data: { status: 'Completed', finishedAt: new Date() },
    });
    expectProblem(await append(completed.id, [stage('two')]), 409, 'pipeline_terminal');
    for (const id of [created.id, completed.id])
      expect(await gw.db.stage.count({ where: { pipelineId: BigInt(id) } })).toBe(1);
    expect((await eventsFor(created.id)).filter((e) => e.type === 'stages.appended')).toHaveLength(
      0,
    );
  });

  it("another application's pipeline is a 404 and nothing is appended", async () => {
    const other = await createPipeline(gw.appB.key, ['one']);
    expectProblem(await append(other.id, [stage('two')]), 404, 'not_found');
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(other.id) } })).toBe(1);
  });

  it('an unknown pipeline is a 404; an invalid id is a 400 at pipelineId', async () => {
    expectProblem(await append(9007199254740991, [stage('two')]), 404, 'not_found');
    for (const id of BAD_IDS) {
      expectProblem(
        await gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: [stage('x')] } }),
        400,
        'validation_failed',
        ['pipelineId'],
      );
    }
  });

  it('missing stages or required stage fields are a 400 with every violation', async () => {
    const created = await createPipeline(gw.appA.key, ['one']);
    expectProblem(
      await gw.call('POST', `/pipelines/${created.id}/stages`, { json: {} }),
      400,
      'validation_failed',
      ['/stages'],
    );
    expectProblem(
      await append(created.id, [{ stageName: 'x' }, { stageHandlerName: 'h' }]),
      400,
      'validation_failed',
      ['/stages/0/stageHandlerName', '/stages/1/stageName'],
    );
  });
});
