// POST /pipelines (legacy), POST /pipelines/idempotent and POST /pipelines/by-idempotency-key
// against a real gateway, database and queue (api-spec "Pipelines", addendum §2, §6).
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '@po/testing';
import {
  compile,
  idempotentPipelineCreateResponseSchema,
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
  expect(reply.text).not.toContain('apiKey');
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
    .map((j) => j.data as { type: string; pipelineId: number; applicationId: number })
    .filter((e) => e.pipelineId === pipelineId);
}

const stage = (stageName = 'first', extra: Record<string, unknown> = {}) => ({
  stageName,
  stageHandlerName: 'handler.one',
  ...extra,
});
const definition = (extra: Record<string, unknown> = {}) => ({
  name: 'nightly import',
  stages: [stage()],
  ...extra,
});
const newKey = () => `key-${randomUUID()}`;

describe('POST /pipelines (legacy contract)', () => {
  it('every successful call creates a new pipeline, even for identical payloads (200 PipelineResponse)', async () => {
    const body = { apiKey: gw.appA.key, ...definition({ traceId: 'trace-legacy-1' }) };
    const first = expectJson(
      await gw.call('POST', '/pipelines', { json: body, key: null }),
      200,
      pipelineResponseSchema,
    );
    const second = expectJson(
      await gw.call('POST', '/pipelines', { json: body, key: null }),
      200,
      pipelineResponseSchema,
    );
    expect(second.id).not.toBe(first.id);
    for (const p of [first, second]) {
      expect(p).toMatchObject({
        name: 'nightly import',
        traceId: 'trace-legacy-1',
        status: 'NotStarted',
        applicationId: gw.appA.id,
        idempotencyKey: null,
        wasExisting: false,
        isTerminal: false,
        finishedAt: null,
        stageStatuses: ['NotStarted'],
      });
      expect(p.stages).toHaveLength(1);
      expect(p.stages[0]).toMatchObject({
        name: 'first',
        stageHandlerName: 'handler.one',
        pipelineId: p.id,
        input: '',
        description: null,
      });
    }
    const rows = await gw.db.pipeline.count({
      where: { id: { in: [BigInt(first.id), BigInt(second.id)] } },
    });
    expect(rows).toBe(2);
  });

  it('publishes pipeline.created for each legacy creation', async () => {
    const p = (
      await gw.call('POST', '/pipelines', {
        json: { apiKey: gw.appA.key, ...definition() },
        key: null,
      })
    ).body;
    expect(await eventsFor(p.id)).toEqual([
      expect.objectContaining({
        type: 'pipeline.created',
        applicationId: gw.appA.id,
        pipelineId: p.id,
      }),
    ]);
  });

  it('a missing (or null) body apiKey is a 400 at /apiKey', async () => {
    for (const json of [definition(), { apiKey: null, ...definition() }]) {
      expectProblem(
        await gw.call('POST', '/pipelines', { json, key: null }),
        400,
        'validation_failed',
        ['/apiKey'],
      );
    }
  });

  it('a non-string body apiKey is a 400 at /apiKey', async () => {
    expectProblem(
      await gw.call('POST', '/pipelines', { json: { apiKey: 42, ...definition() }, key: null }),
      400,
      'validation_failed',
      ['/apiKey'],
    );
  });

  it('a present but invalid body apiKey is a 401, checked before the rest of the body is validated', async () => {
    const reply = await gw.call('POST', '/pipelines', {
      json: { apiKey: 'pos_not-a-key', name: '', stages: [] },
      key: null,
    });
    expectProblem(reply, 401, 'unauthorized');
  });

  it('a disabled or expired body apiKey is a 401', async () => {
    const expired = await gw.invalidKey('expired');
    const disabled = await gw.invalidKey('disabled');
    for (const apiKey of [expired, disabled]) {
      expectProblem(
        await gw.call('POST', '/pipelines', { json: { apiKey, ...definition() }, key: null }),
        401,
        'unauthorized',
      );
    }
  });

  it('the X-API-Key header is ignored: the body key decides the application', async () => {
    // A valid header does not replace a missing body key.
    expectProblem(
      await gw.call('POST', '/pipelines', { json: definition(), key: gw.appA.key }),
      400,
      'validation_failed',
      ['/apiKey'],
    );
    // An invalid header does not stop a valid body key.
    const viaBody = await gw.call('POST', '/pipelines', {
      json: { apiKey: gw.appB.key, ...definition() },
      key: 'pos_garbage',
    });
    expect(expectJson(viaBody, 200, pipelineResponseSchema).applicationId).toBe(gw.appB.id);
    // Application A's header does not win over application B's body key.
    const mixed = await gw.call('POST', '/pipelines', {
      json: { apiKey: gw.appB.key, ...definition() },
      key: gw.appA.key,
    });
    expect(expectJson(mixed, 200, pipelineResponseSchema).applicationId).toBe(gw.appB.id);
  });

  it('a valid key with an invalid definition is a 400 with every violation', async () => {
    const reply = await gw.call('POST', '/pipelines', {
      json: { apiKey: gw.appA.key, name: '', stages: [] },
      key: null,
    });
    expectProblem(reply, 400, 'validation_failed', ['/name', '/stages']);
  });
});

describe('POST /pipelines/idempotent', () => {
  it('creates a new pipeline: 201, created=true, wasExisting=false', async () => {
    const idempotencyKey = newKey();
    const reply = await gw.call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, ...definition() },
    });
    const body = expectJson(reply, 201, idempotentPipelineCreateResponseSchema);
    expect(body).toMatchObject({ created: true, wasExisting: false });
    expect(body.pipeline).toMatchObject({
      idempotencyKey,
      applicationId: gw.appA.id,
      status: 'NotStarted',
      wasExisting: false,
    });
    // Without a traceId the server generates a 32-lowercase-hex one (addendum §4).
    expect(body.pipeline.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(await eventsFor(body.pipeline.id)).toEqual([
      expect.objectContaining({ type: 'pipeline.created', applicationId: gw.appA.id }),
    ]);
  });

  it('the same key and intent returns the same pipeline: 200, wasExisting=true, pipeline.wasExisting=true, even with a different traceId', async () => {
    const idempotencyKey = newKey();
    const first = (
      await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey, ...definition({ traceId: 'trace-a' }) },
      })
    ).body;
    expect(first.created).toBe(true);
    for (const traceId of ['trace-a', 'trace-b', undefined]) {
      const again = await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey, ...definition(traceId ? { traceId } : {}) },
      });
      const body = expectJson(again, 200, idempotentPipelineCreateResponseSchema);
      expect(body).toMatchObject({ created: false, wasExisting: true });
      expect(body.pipeline).toMatchObject({
        id: first.pipeline.id,
        wasExisting: true,
        traceId: 'trace-a',
        idempotencyKey,
      });
    }
    // Only the 201 announced a creation.
    expect(
      (await eventsFor(first.pipeline.id)).filter((e) => e.type === 'pipeline.created'),
    ).toHaveLength(1);
    // wasExisting is a property of the 200 answer only, not of the stored pipeline.
    expect((await gw.call('GET', `/pipelines/${first.pipeline.id}`)).body.wasExisting).toBe(false);
  });

  it('member order, a body apiKey and unknown fields are not part of the intent', async () => {
    const idempotencyKey = newKey();
    const first = (
      await gw.call('POST', '/pipelines/idempotent', {
        json: {
          idempotencyKey,
          name: 'order',
          stages: [
            { stageName: 's', stageHandlerName: 'h', options: { maxRetries: 2, retryInterval: 5 } },
          ],
        },
      })
    ).body;
    const reordered = await gw.call('POST', '/pipelines/idempotent', {
      json: {
        stages: [
          { options: { retryInterval: 5, maxRetries: 2 }, stageHandlerName: 'h', stageName: 's' },
        ],
        name: 'order',
        idempotencyKey,
        apiKey: 'pos_ignored',
        somethingNew: 1,
      },
    });
    expect(expectJson(reordered, 200, idempotentPipelineCreateResponseSchema).pipeline.id).toBe(
      first.pipeline.id,
    );
  });

  it('the same key with a different creation intent is a 409 idempotency_conflict', async () => {
    const idempotencyKey = newKey();
    const first = (
      await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey, ...definition() } })
    ).body;
    expectProblem(
      await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey, ...definition({ name: 'another name' }) },
      }),
      409,
      'idempotency_conflict',
    );
    expectProblem(
      await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey, ...definition({ stages: [stage('first'), stage('second')] }) },
      }),
      409,
      'idempotency_conflict',
    );
    // Array order matters.
    const twoStages = newKey();
    await gw.call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey: twoStages, ...definition({ stages: [stage('a'), stage('b')] }) },
    });
    expectProblem(
      await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey: twoStages, ...definition({ stages: [stage('b'), stage('a')] }) },
      }),
      409,
      'idempotency_conflict',
    );
    // The conflict changed nothing.
    const read = (await gw.call('GET', `/pipelines/${first.pipeline.id}`)).body;
    expect(read.name).toBe('nightly import');
    expect(read.stages).toHaveLength(1);
  });

  it('null equals omitted in the creation intent', async () => {
    const idempotencyKey = newKey();
    const first = await gw.call('POST', '/pipelines/idempotent', {
      json: {
        idempotencyKey,
        name: 'nulls',
        policies: null,
        pipelineKeywords: null,
        stages: [stage('s', { description: null, input: null, options: null })],
      },
    });
    expect(first.status, first.text).toBe(201);
    const omitted = await gw.call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, name: 'nulls', stages: [stage('s')] },
    });
    expect(expectJson(omitted, 200, idempotentPipelineCreateResponseSchema).pipeline.id).toBe(
      first.body.pipeline.id,
    );
  });

  it('a default value differs from an omitted field in the creation intent', async () => {
    const idempotencyKey = newKey();
    expect(
      (
        await gw.call('POST', '/pipelines/idempotent', {
          json: { idempotencyKey, ...definition() },
        })
      ).status,
    ).toBe(201);
    expectProblem(
      await gw.call('POST', '/pipelines/idempotent', {
        json: {
          idempotencyKey,
          ...definition({ stages: [stage('first', { options: { backoff: 'fixed' } })] }),
        },
      }),
      409,
      'idempotency_conflict',
    );
    expectProblem(
      await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey, ...definition({ stages: [stage('first', { isEvent: false })] }) },
      }),
      409,
      'idempotency_conflict',
    );
  });

  it('a missing, empty or too long idempotencyKey is a 400 at /idempotencyKey', async () => {
    for (const idempotencyKey of [undefined, '', 'k'.repeat(201), 7]) {
      expectProblem(
        await gw.call('POST', '/pipelines/idempotent', {
          json: { idempotencyKey, ...definition() },
        }),
        400,
        'validation_failed',
        ['/idempotencyKey'],
      );
    }
  });

  it('50 concurrent identical creations give exactly one 201 and 49 200s with one pipeline id, and one pipeline row', async () => {
    const idempotencyKey = newKey();
    const body = { idempotencyKey, ...definition({ name: 'concurrent' }) };
    const replies = await Promise.all(
      Array.from({ length: 50 }, () => gw.call('POST', '/pipelines/idempotent', { json: body })),
    );
    const statuses = replies.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 201),
      JSON.stringify(replies.filter((r) => r.status >= 300).map((r) => r.body)),
    ).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(49);
    for (const reply of replies)
      expectJson(reply, reply.status, idempotentPipelineCreateResponseSchema);
    const ids = new Set(replies.map((r) => r.body.pipeline.id));
    expect(ids.size).toBe(1);
    expect(replies.filter((r) => r.body.created)).toHaveLength(1);
    expect(replies.filter((r) => r.body.wasExisting)).toHaveLength(49);
    expect(
      await gw.db.pipeline.count({ where: { applicationId: gw.appA.id, idempotencyKey } }),
    ).toBe(1);
    const [id] = [...ids];
    expect((await eventsFor(id)).filter((e) => e.type === 'pipeline.created')).toHaveLength(1);
    // A different intent under the same key is refused afterwards.
    expectProblem(
      await gw.call('POST', '/pipelines/idempotent', { json: { ...body, name: 'different' } }),
      409,
      'idempotency_conflict',
    );
  });

  it('concurrent creations with the same key but different intents: one 201, the rest 200 (same intent) or 409', async () => {
    const idempotencyKey = newKey();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        gw.call('POST', '/pipelines/idempotent', {
          json: { idempotencyKey, ...definition({ name: `intent ${i % 2}` }) },
        }),
      ),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    const winner = created[0]!.body.pipeline;
    for (const reply of replies) {
      if (reply.status === 201) continue;
      if (reply.status === 200)
        expect(reply.body.pipeline).toMatchObject({ id: winner.id, name: winner.name });
      else expectProblem(reply, 409, 'idempotency_conflict');
    }
    expect(replies.filter((r) => r.status === 409)).toHaveLength(10);
    expect(
      await gw.db.pipeline.count({ where: { applicationId: gw.appA.id, idempotencyKey } }),
    ).toBe(1);
  });
});

describe('POST /pipelines/by-idempotency-key', () => {
  it('returns the pipeline of this application and key (200 PipelineResponse)', async () => {
    const idempotencyKey = newKey();
    const created = (
      await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey, ...definition() } })
    ).body;
    const reply = await gw.call('POST', '/pipelines/by-idempotency-key', {
      json: { idempotencyKey },
    });
    const body = expectJson(reply, 200, pipelineResponseSchema);
    expect(body).toMatchObject({ id: created.pipeline.id, idempotencyKey, wasExisting: false });
  });

  it('an unknown key is a 404', async () => {
    expectProblem(
      await gw.call('POST', '/pipelines/by-idempotency-key', {
        json: { idempotencyKey: newKey() },
      }),
      404,
      'not_found',
    );
  });

  it('a missing, empty or too long key is a 400 at /idempotencyKey', async () => {
    for (const json of [
      {},
      { idempotencyKey: '' },
      { idempotencyKey: 'k'.repeat(201) },
      { idempotencyKey: ['x'] },
    ]) {
      expectProblem(
        await gw.call('POST', '/pipelines/by-idempotency-key', { json }),
        400,
        'validation_failed',
        ['/idempotencyKey'],
      );
    }
  });
});
