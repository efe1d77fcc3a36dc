// Each application sees only its own pipelines and stages (api-spec "What the service does" 6,
// "Errors": GET 403, cancel/append/lookup/resume 404; addendum §6 keys scoped per application).
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  idempotentPipelineCreateResponseSchema,
  pipelineResponseSchema,
  problemDetailsSchema,
} from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../testing/harness.js';
import { PIPELINE_EVENTS_QUEUE } from '@po/queues';

let gw: Gateway;
let events: Queue;
const sharedKey = `shared-${randomUUID()}`;
let pipelineOfA: { id: number; stages: { id: number }[] };
let snapshotOfA: unknown;

beforeAll(async () => {
  gw = await startGateway();
  events = new Queue(PIPELINE_EVENTS_QUEUE, { connection: gw.redis, prefix: gw.prefix });
  const created = await gw.call('POST', '/pipelines/idempotent', {
    key: gw.appA.key,
    json: {
      idempotencyKey: sharedKey,
      name: 'owned by A',
      stages: [
        { stageName: 'approve', stageHandlerName: 'h' },
        { stageName: 'next', stageHandlerName: 'h' },
      ],
    },
  });
  expect(created.status, created.text).toBe(201);
  pipelineOfA = created.body.pipeline;
  await gw.db.stage.update({
    where: { id: BigInt(pipelineOfA.stages[0]!.id) },
    data: { status: 'WaitingForApproval' },
  });
  snapshotOfA = (await gw.call('GET', `/pipelines/${pipelineOfA.id}`, { key: gw.appA.key })).body;
});
afterAll(async () => {
  await events?.close();
  await gw?.close();
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
function expectProblem(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body).toMatchObject({ status, code });
  // Nothing of A's pipeline leaks into the problem.
  expect(reply.text).not.toContain('owned by A');
}
function shapeErrors(schema: Parameters<typeof compile>[0], body: unknown) {
  const checked = compile(schema, { normalise: false })(body);
  return checked.ok ? [] : checked.errors;
}

describe("application B's key never sees or changes application A's pipelines", () => {
  it("GET of A's pipeline with B's key is a 403 forbidden", async () => {
    expectProblem(
      await gw.call('GET', `/pipelines/${pipelineOfA.id}`, { key: gw.appB.key }),
      403,
      'forbidden',
    );
  });

  it("cancel of A's pipeline with B's key is a 404", async () => {
    expectProblem(
      await gw.call('POST', `/pipelines/${pipelineOfA.id}/cancel`, { key: gw.appB.key }),
      404,
      'not_found',
    );
  });

  it("append to A's pipeline with B's key is a 404", async () => {
    expectProblem(
      await gw.call('POST', `/pipelines/${pipelineOfA.id}/stages`, {
        key: gw.appB.key,
        json: { stages: [{ stageName: 'intruder', stageHandlerName: 'h' }] },
      }),
      404,
      'not_found',
    );
  });

  it("lookup of A's idempotency key with B's key is a 404", async () => {
    expectProblem(
      await gw.call('POST', '/pipelines/by-idempotency-key', {
        key: gw.appB.key,
        json: { idempotencyKey: sharedKey },
      }),
      404,
      'not_found',
    );
  });

  it("resume of A's waiting stage with B's key is a 404, for approval and rejection", async () => {
    for (const approved of [true, false]) {
      expectProblem(
        await gw.call('POST', `/stages/${pipelineOfA.stages[0]!.id}/resume`, {
          key: gw.appB.key,
          json: { approved },
        }),
        404,
        'not_found',
      );
    }
    // A stage that is not waiting answers the same 404, so B learns nothing about A's stage states.
    expectProblem(
      await gw.call('POST', `/stages/${pipelineOfA.stages[1]!.id}/resume`, {
        key: gw.appB.key,
        json: { approved: true },
      }),
      404,
      'not_found',
    );
  });

  it("A's pipeline is exactly as it was, and none of B's attempts was announced", async () => {
    expect(
      (await gw.call('GET', `/pipelines/${pipelineOfA.id}`, { key: gw.appA.key })).body,
    ).toEqual(snapshotOfA);
    const jobs = await events.getJobs([
      'waiting',
      'delayed',
      'active',
      'completed',
      'failed',
      'prioritized',
    ]);
    const types = jobs
      .map((j) => j.data as { type: string; pipelineId: number })
      .filter((e) => e.pipelineId === pipelineOfA.id)
      .map((e) => e.type);
    expect(types).toEqual(['pipeline.created']);
  });

  it("the same idempotency key used by B creates B's own pipeline, and each lookup finds its own", async () => {
    // Same key, a different intent: no conflict across applications.
    const created = await gw.call('POST', '/pipelines/idempotent', {
      key: gw.appB.key,
      json: {
        idempotencyKey: sharedKey,
        name: 'owned by B',
        stages: [{ stageName: 'b', stageHandlerName: 'h' }],
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(shapeErrors(idempotentPipelineCreateResponseSchema, created.body)).toEqual([]);
    expect(created.body).toMatchObject({ created: true, wasExisting: false });
    expect(created.body.pipeline).toMatchObject({
      applicationId: gw.appB.id,
      name: 'owned by B',
      idempotencyKey: sharedKey,
    });
    expect(created.body.pipeline.id).not.toBe(pipelineOfA.id);

    // B's own retry resolves to B's pipeline; A's retry still resolves to A's.
    const retryB = await gw.call('POST', '/pipelines/idempotent', {
      key: gw.appB.key,
      json: {
        idempotencyKey: sharedKey,
        name: 'owned by B',
        stages: [{ stageName: 'b', stageHandlerName: 'h' }],
      },
    });
    expect(retryB.status).toBe(200);
    expect(retryB.body.pipeline.id).toBe(created.body.pipeline.id);
    const retryA = await gw.call('POST', '/pipelines/idempotent', {
      key: gw.appA.key,
      json: {
        idempotencyKey: sharedKey,
        name: 'owned by A',
        stages: [
          { stageName: 'approve', stageHandlerName: 'h' },
          { stageName: 'next', stageHandlerName: 'h' },
        ],
      },
    });
    expect(retryA.status).toBe(200);
    expect(retryA.body.pipeline.id).toBe(pipelineOfA.id);

    const lookupA = await gw.call('POST', '/pipelines/by-idempotency-key', {
      key: gw.appA.key,
      json: { idempotencyKey: sharedKey },
    });
    const lookupB = await gw.call('POST', '/pipelines/by-idempotency-key', {
      key: gw.appB.key,
      json: { idempotencyKey: sharedKey },
    });
    expect(shapeErrors(pipelineResponseSchema, lookupA.body)).toEqual([]);
    expect(shapeErrors(pipelineResponseSchema, lookupB.body)).toEqual([]);
    expect([lookupA.body.id, lookupB.body.id]).toEqual([pipelineOfA.id, created.body.pipeline.id]);

    // And A cannot read B's pipeline either.
    expectProblem(
      await gw.call('GET', `/pipelines/${created.body.pipeline.id}`, { key: gw.appA.key }),
      403,
      'forbidden',
    );
  });
});
