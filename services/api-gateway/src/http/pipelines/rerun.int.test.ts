// POST /pipelines/{pipelineId}/rerun (issue 12, decision 0089): a new pipeline from the definition
// a terminal pipeline was created with, linked both ways, sensitive values carried but never shown.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelinePageSchema, pipelineResponseSchema, type PipelineResponse } from '@po/contracts';
import { deleteExpiredPipelines, sqlOf } from '@po/db';
import { expectProblem, expectValid } from '@po/testing';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE } from '@po/queues';

const T0 = Date.parse('2030-07-01T00:00:00.000Z');
let now = T0;
let gw: Gateway;
let events: Queue;
const SECRET = 'rerun-sensitive-value-7f3a';

beforeAll(async () => {
  gw = await startGateway({ clock: () => new Date(now) });
  events = new Queue(PIPELINE_EVENTS_QUEUE, { connection: gw.redis, prefix: gw.prefix });
});
afterAll(async () => {
  await events?.close();
  await gw?.close();
});

function expectPipeline(reply: Reply, status: number): PipelineResponse {
  expect(reply.status, reply.text).toBe(status);
  expectValid(pipelineResponseSchema, reply.body);
  return reply.body;
}

const definition = {
  name: 'nightly import',
  traceId: 'original-trace',
  policies: [{ owner: 'data' }],
  stages: [
    { stageName: 'extract', stageHandlerName: 'extract.h', input: '{"day":"2030-07-01"}', description: 'pull', options: { maxRetries: 2, retryInterval: 5 } },
    { stageName: 'load', stageHandlerName: 'load.h', input: 'rows', isEvent: true, options: { dependsOn: ['extract'], runNextIfFailed: true } },
  ],
  pipelineKeywords: [
    { key: 'env', value: 'prod' },
    { key: 'region', value: 'eu' },
  ],
  pipelineContextItems: [
    { key: 'customer', value: '42', valueType: 'int' },
    { key: 'token', value: SECRET, isSensitive: true },
    { key: 'status', value: 'new' },
    { key: 'scratch', value: 'x' },
  ],
};

async function createPipeline(key = gw.appA.key): Promise<PipelineResponse> {
  now += 1_000;
  const reply = await gw.call('POST', '/pipelines/idempotent', { key, json: { ...definition, idempotencyKey: `k-${now}` } });
  expect(reply.status, reply.text).toBe(201);
  expectValid(pipelineResponseSchema, reply.body.pipeline);
  return reply.body.pipeline;
}

async function cancel(id: number, key = gw.appA.key) {
  expect((await gw.call('POST', `/pipelines/${id}/cancel`, { key })).status).toBe(200);
}

async function rerun(id: number, key = gw.appA.key): Promise<PipelineResponse> {
  now += 1_000;
  return expectPipeline(await gw.call('POST', `/pipelines/${id}/rerun`, { key }), 201);
}

async function read(id: number, key = gw.appA.key): Promise<PipelineResponse> {
  return expectPipeline(await gw.call('GET', `/pipelines/${id}`, { key }), 200);
}

async function storedContext(id: number) {
  return gw.db.contextItem.findMany({ where: { pipelineId: BigInt(id) }, orderBy: { id: 'asc' }, select: { key: true, value: true, isSensitive: true, valueType: true } });
}

async function eventsFor(pipelineId: number) {
  const jobs = await events.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized']);
  return jobs.map((j) => j.data as { type: string; pipelineId: number; applicationId: number }).filter((e) => e.pipelineId === pipelineId);
}

const stageDefinition = (p: PipelineResponse) =>
  p.stages.map((s) => ({ name: s.name, handler: s.stageHandlerName, description: s.description, input: s.input, isEvent: s.isEvent, options: s.options }));

describe('POST /pipelines/{pipelineId}/rerun', () => {
  it('reruns a terminal pipeline: same stages, inputs, options, keywords and context; linked both ways; announced', async () => {
    const original = await createPipeline();
    await cancel(original.id);
    const before = await read(original.id);
    const copy = await rerun(original.id);

    expect(copy.id).toBeGreaterThan(original.id);
    expect(copy).toMatchObject({
      name: 'nightly import',
      status: 'NotStarted',
      isTerminal: false,
      finishedAt: null,
      applicationId: gw.appA.id,
      idempotencyKey: null,
      wasExisting: false,
      rerunOf: original.id,
      reruns: [],
      createdAt: new Date(now).toISOString(),
      stageStatuses: ['NotStarted', 'NotStarted'],
    });
    // A new run is a new trace: the request's, not the original's traceId.
    expect(copy.traceId).not.toBe('original-trace');
    expect(stageDefinition(copy)).toEqual(stageDefinition(original));
    expect(copy.stages.every((s) => s.pipelineId === copy.id && s.status === 'NotStarted' && s.attempt === 0)).toBe(true);
    expect(copy.pipelineKeywords).toEqual(original.pipelineKeywords);
    expect(copy.pipelineContextItems).toEqual(original.pipelineContextItems);
    expect(copy.pipelineContextItems.find((c) => c.key === 'token')).toEqual({
      key: 'token',
      value: '[REDACTED]',
      valueType: null,
      isSensitive: true,
      isDeleted: false,
    });
    // The sensitive value is carried in the database, never shown.
    expect((await storedContext(copy.id)).find((c) => c.key === 'token')).toEqual({ key: 'token', value: SECRET, isSensitive: true, valueType: null });
    const policies = await gw.db.pipeline.findUnique({ where: { id: BigInt(copy.id) }, select: { policies: true, rerunOf: true, scheduleId: true } });
    expect(policies).toEqual({ policies: [{ owner: 'data' }], rerunOf: BigInt(original.id), scheduleId: null });

    expect(await read(copy.id)).toMatchObject({ rerunOf: original.id, reruns: [] });
    const after = await read(original.id);
    expect(after).toEqual({ ...before, reruns: [copy.id] });
    expect(await eventsFor(copy.id)).toEqual([expect.objectContaining({ type: 'pipeline.created', applicationId: gw.appA.id, pipelineId: copy.id })]);
  });

  it('never shows or logs the sensitive value', async () => {
    const original = await createPipeline();
    await cancel(original.id);
    const reply = await gw.call('POST', `/pipelines/${original.id}/rerun`);
    expect(reply.status).toBe(201);
    expect(reply.text).not.toContain(SECRET);
    expect((await gw.call('GET', `/pipelines/${reply.body.id}`)).text).not.toContain(SECRET);
    expect((await gw.call('GET', '/pipelines?limit=200')).text).not.toContain(SECRET);
    expect(gw.logLines.filter((l) => l.includes(SECRET))).toEqual([]);
  });

  it('repeats the definition as created: not appended stages, not context that stage results wrote', async () => {
    const original = await createPipeline();
    // A client appends a stage; stage results change a key, add one and remove one.
    now += 1_000;
    expect((await gw.call('POST', `/pipelines/${original.id}/stages`, { json: { stages: [{ stageName: 'appended', stageHandlerName: 'x' }] } })).status).toBe(200);
    const later = new Date(now + 500);
    await gw.db.$executeRaw`UPDATE context_items SET value = 'done', updated_at = ${later} WHERE pipeline_id = ${BigInt(original.id)} AND key = 'status'`;
    await gw.db.$executeRaw`INSERT INTO context_items (pipeline_id, key, value, updated_at) VALUES (${BigInt(original.id)}, 'output', 'o', ${later})`;
    await gw.db.$executeRaw`DELETE FROM context_items WHERE pipeline_id = ${BigInt(original.id)} AND key = 'scratch'`;
    await cancel(original.id);
    expect((await read(original.id)).stages.map((s) => s.name)).toEqual(['extract', 'load', 'appended']);

    const copy = await rerun(original.id);
    expect(copy.stages.map((s) => s.name)).toEqual(['extract', 'load']);
    expect(copy.stages[1]?.options.dependsOn).toEqual(['extract']);
    expect(copy.pipelineContextItems.map((c) => [c.key, c.value])).toEqual([
      ['customer', '42'],
      ['token', '[REDACTED]'],
    ]);
    expect((await storedContext(copy.id)).map((c) => [c.key, c.value])).toEqual([
      ['customer', '42'],
      ['token', SECRET],
    ]);
  });

  it('a rerun of a rerun links to its own original; reruns are listed newest first', async () => {
    const original = await createPipeline();
    await cancel(original.id);
    const first = await rerun(original.id);
    const second = await rerun(original.id);
    await cancel(first.id);
    const grandchild = await rerun(first.id);
    expect(grandchild.rerunOf).toBe(first.id);
    expect((await storedContext(grandchild.id)).find((c) => c.key === 'token')?.value).toBe(SECRET);
    expect((await read(original.id)).reruns).toEqual([second.id, first.id]);
    expect(await read(first.id)).toMatchObject({ rerunOf: original.id, reruns: [grandchild.id] });
    // The list shows the link too.
    const listed = (await gw.call('GET', `/pipelines?createdAfter=${encodeURIComponent(new Date(now).toISOString())}`)).body;
    expectValid(pipelinePageSchema, listed);
    expect(listed.items).toEqual([expect.objectContaining({ id: grandchild.id, rerunOf: first.id })]);
  });

  it.each(['Completed', 'Failed'] as const)('reruns a %s pipeline too', async (status) => {
    const original = await createPipeline();
    await gw.db.$executeRaw`UPDATE pipelines SET status = ${status}::"PipelineStatus", finished_at = now() WHERE id = ${BigInt(original.id)}`;
    expect((await rerun(original.id)).rerunOf).toBe(original.id);
  });

  it.each(['NotStarted', 'Pending', 'Running', 'Paused'] as const)('a %s pipeline is a 409 pipeline_not_terminal; nothing is created', async (status) => {
    const original = await createPipeline();
    await gw.db.$executeRaw`UPDATE pipelines SET status = ${status}::"PipelineStatus" WHERE id = ${BigInt(original.id)}`;
    const count = await gw.db.pipeline.count();
    expectProblem(await gw.call('POST', `/pipelines/${original.id}/rerun`), 409, 'pipeline_not_terminal');
    expect(await gw.db.pipeline.count()).toBe(count);
    expect((await read(original.id)).reruns).toEqual([]);
  });

  it("another application's pipeline is a 404, like one that does not exist; ids and keys are checked first", async () => {
    const original = await createPipeline();
    await cancel(original.id);
    expectProblem(await gw.call('POST', `/pipelines/${original.id}/rerun`, { key: gw.appB.key }), 404, 'not_found');
    expectProblem(await gw.call('POST', '/pipelines/999999999/rerun'), 404, 'not_found');
    expectProblem(await gw.call('POST', '/pipelines/0/rerun'), 400, 'validation_failed', ['pipelineId']);
    expectProblem(await gw.call('POST', '/pipelines/abc/rerun'), 400, 'validation_failed', ['pipelineId']);
    expectProblem(await gw.call('POST', `/pipelines/${original.id}/rerun`, { key: null }), 401, 'unauthorized');
    expectProblem(await gw.call('POST', `/pipelines/${original.id}/rerun`, { raw: 'x'.repeat(70_000) }), 413, 'payload_too_large');
    expect((await read(original.id)).reruns).toEqual([]);
    // A body is ignored.
    expect((await gw.call('POST', `/pipelines/${original.id}/rerun`, { json: { name: 'other' } })).body.name).toBe('nightly import');
  });

  it('retention may delete the original: the rerun keeps its rerunOf, and the original cannot be rerun any more', async () => {
    const original = await createPipeline();
    await cancel(original.id);
    const copy = await rerun(original.id);
    await gw.db.$executeRaw`UPDATE pipelines SET finished_at = ${new Date(T0 - 86_400_000)} WHERE id = ${BigInt(original.id)}`;
    const batch = await deleteExpiredPipelines(sqlOf(gw.db), new Date(T0 - 3_600_000), 10);
    expect(batch.deleted.pipelines).toBeGreaterThanOrEqual(1);
    expectProblem(await gw.call('GET', `/pipelines/${original.id}`), 404, 'not_found');
    expectProblem(await gw.call('POST', `/pipelines/${original.id}/rerun`), 404, 'not_found');
    expect(await read(copy.id)).toMatchObject({ rerunOf: original.id });
    expect((await storedContext(copy.id)).find((c) => c.key === 'token')?.value).toBe(SECRET);
  });
});

describe('POST /pipelines/{pipelineId}/rerun from the failure (decision 0133)', () => {
  /**
   * A run that went this far: extract Completed (with output, timings, two logs and a context key
   * it wrote), load Failed, and a stage appended during the run. Stage state is written by SQL
   * here, as the engine would have.
   */
  async function failedRun(): Promise<PipelineResponse> {
    const original = await createPipeline();
    now += 1_000;
    expect((await gw.call('POST', `/pipelines/${original.id}/stages`, { json: { stages: [{ stageName: 'report', stageHandlerName: 'report.h' }] } })).status).toBe(200);
    const [extract, load] = original.stages;
    const started = new Date(now - 900);
    const finished = new Date(now - 400);
    await gw.db.$executeRaw`UPDATE stages SET status = 'Completed', output = '{"rows":120}', started_at = ${started}, finished_at = ${finished}, attempt = 1 WHERE id = ${BigInt(extract!.id)}`;
    await gw.db.$executeRaw`INSERT INTO stage_logs (stage_id, pipeline_id, message, log_level, created) VALUES
      (${BigInt(extract!.id)}, ${BigInt(original.id)}, 'pulled 120 rows', 'Information', ${started}),
      (${BigInt(extract!.id)}, ${BigInt(original.id)}, 'slow source', 'Warning', ${finished})`;
    await gw.db.$executeRaw`INSERT INTO context_items (pipeline_id, key, value, updated_at) VALUES (${BigInt(original.id)}, 'extracted', 'batch-7', ${finished})`;
    await gw.db.$executeRaw`UPDATE stages SET status = 'Failed', attempt = 1, last_error_code = 'DOWNSTREAM_DOWN', finished_at = ${finished} WHERE id = ${BigInt(load!.id)}`;
    await gw.db.$executeRaw`UPDATE stages SET status = 'Skipped' WHERE pipeline_id = ${BigInt(original.id)} AND name = 'report'`;
    await gw.db.$executeRaw`UPDATE pipelines SET status = 'Failed', finished_at = ${finished} WHERE id = ${BigInt(original.id)}`;
    return read(original.id);
  }

  async function rerunFrom(id: number, from: string, key = gw.appA.key) {
    now += 1_000;
    return gw.call('POST', `/pipelines/${id}/rerun`, { key, json: { from } });
  }

  it('carries over what Completed (output, timings, logs marked), runs the rest, and keeps the context as the run left it', async () => {
    const original = await failedRun();
    const copy = expectPipeline(await rerunFrom(original.id, 'failed'), 201);
    expect(copy).toMatchObject({ rerunOf: original.id, status: 'NotStarted', isTerminal: false });
    // Every stage, the appended one too, in order.
    expect(copy.stages.map((s) => [s.name, s.status])).toEqual([
      ['extract', 'Completed'],
      ['load', 'NotStarted'],
      ['report', 'NotStarted'],
    ]);
    const [extract, load] = copy.stages;
    const was = original.stages[0]!;
    expect(extract).toMatchObject({
      carriedOverFrom: was.id,
      output: '{"rows":120}',
      startedAt: was.startedAt,
      finishedAt: was.finishedAt,
      attempt: 0,
      isTerminal: true,
    });
    expect(extract!.logs.map((l) => [l.message, l.logLevel, l.created, l.carriedOver, l.stageId])).toEqual(
      was.logs.map((l) => [l.message, l.logLevel, l.created, true, extract!.id]),
    );
    expect(was.logs.every((l) => !l.carriedOver)).toBe(true);
    expect(load).toMatchObject({ carriedOverFrom: null, output: null, attempt: 0, lastErrorCode: null, logs: [] });
    // The context as the run left it, the sensitive value copied in the database only.
    expect(copy.pipelineContextItems.map((c) => [c.key, c.value])).toEqual(original.pipelineContextItems.map((c) => [c.key, c.value]));
    expect(copy.pipelineContextItems.find((c) => c.key === 'extracted')?.value).toBe('batch-7');
    expect((await storedContext(copy.id)).find((c) => c.key === 'token')?.value).toBe(SECRET);
    // A carried-over stage has no execution: nothing of it can be published or delivered.
    expect(await gw.db.stageExecution.count({ where: { stageId: BigInt(extract!.id) } })).toBe(0);
    // The log page shows the marks too; the original is as it was.
    const page = await gw.call('GET', `/pipelines/${copy.id}/stages/${extract!.id}/logs`);
    expect(page.status, page.text).toBe(200);
    expect(page.body.items.map((l: { carriedOver: boolean }) => l.carriedOver)).toEqual([true, true]);
    expect(await read(original.id)).toEqual({ ...original, reruns: [copy.id] });
    expect(await eventsFor(copy.id)).toEqual([expect.objectContaining({ type: 'pipeline.created', pipelineId: copy.id })]);
  });

  it('a Cancelled pipeline reruns from its failure too; "start" and no body still rerun every stage', async () => {
    const original = await failedRun();
    await gw.db.$executeRaw`UPDATE pipelines SET status = 'Cancelled' WHERE id = ${BigInt(original.id)}`;
    const fromFailure = expectPipeline(await rerunFrom(original.id, 'failed'), 201);
    expect(fromFailure.stageStatuses).toEqual(['Completed', 'NotStarted', 'NotStarted']);
    const fromStart = expectPipeline(await rerunFrom(original.id, 'start'), 201);
    expect(fromStart.stages.map((s) => [s.name, s.status, s.carriedOverFrom])).toEqual([
      ['extract', 'NotStarted', null],
      ['load', 'NotStarted', null],
    ]);
    expect((await rerun(original.id)).stageStatuses).toEqual(['NotStarted', 'NotStarted']);
  });

  it('a Completed pipeline has no failure to rerun from: 409 pipeline_not_failed, nothing created; a bad from is a 400 naming it', async () => {
    const original = await createPipeline();
    await gw.db.$executeRaw`UPDATE pipelines SET status = 'Completed', finished_at = now() WHERE id = ${BigInt(original.id)}`;
    const count = await gw.db.pipeline.count();
    expectProblem(await rerunFrom(original.id, 'failed'), 409, 'pipeline_not_failed');
    expectProblem(await rerunFrom(original.id, 'middle'), 400, 'validation_failed', ['/from']);
    expect(await gw.db.pipeline.count()).toBe(count);
  });

  it("another application's key gets 404 and creates nothing", async () => {
    const original = await failedRun();
    const count = await gw.db.pipeline.count();
    expectProblem(await rerunFrom(original.id, 'failed', gw.appB.key), 404, 'not_found');
    expect(await gw.db.pipeline.count()).toBe(count);
  });
});
