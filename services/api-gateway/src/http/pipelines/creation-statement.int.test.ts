// What the one-statement creation and append guarantee beyond the response shape (addendum §6,
// decisions 0008 and 0070): ids increase with position, a repeated context key keeps its last
// value, a bound key inserts nothing, and text is stored as PostgreSQL can hold it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const stages = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ stageName: `${prefix}${i}`, stageHandlerName: 'h' }));

async function storedStages(pipelineId: number) {
  const rows = await gw.db.stage.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { position: 'asc' },
  });
  return rows.map((r) => ({ id: Number(r.id), position: r.position, name: r.name }));
}

const increasing = (ids: number[]) => ids.every((id, i) => i === 0 || id > ids[i - 1]!);

describe('one-statement creation', () => {
  it('stage ids increase with position, also while other creations draw ids concurrently', async () => {
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        gw.call('POST', '/pipelines/idempotent', {
          json: { idempotencyKey: randomUUID(), name: `p${i}`, stages: stages('s', 30) },
        }),
      ),
    );
    for (const reply of replies) {
      expect(reply.status, reply.text).toBe(201);
      const p = reply.body.pipeline;
      const stored = await storedStages(p.id);
      expect(stored.map((s) => s.position)).toEqual([...Array(30).keys()]);
      expect(increasing(stored.map((s) => s.id))).toBe(true);
      expect(p.stages.map((s: { id: number }) => s.id)).toEqual(stored.map((s) => s.id));
      expect(p.stages.map((s: { nextStageId: number | null }) => s.nextStageId)).toEqual([
        ...stored.slice(1).map((s) => s.id),
        null,
      ]);
    }
  });

  it('appended stages go at the end with larger ids, after the stages appended before them', async () => {
    const created = await gw.call('POST', '/pipelines', {
      json: { apiKey: gw.appA.key, name: 'append', stages: stages('a', 2) },
      key: null,
    });
    const id = created.body.id as number;
    const appends = await Promise.all(
      ['x', 'y', 'z'].map((prefix) =>
        gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: stages(prefix, 3) } }),
      ),
    );
    for (const reply of appends) expect(reply.status, reply.text).toBe(200);
    const stored = await storedStages(id);
    expect(stored.map((s) => s.position)).toEqual([...Array(11).keys()]);
    expect(increasing(stored.map((s) => s.id))).toBe(true);
    const read = (await gw.call('GET', `/pipelines/${id}`)).body;
    expect(read.stages.map((s: { id: number }) => s.id)).toEqual(stored.map((s) => s.id));
  });

  it('a repeated context key keeps its last value, in the place of its first occurrence', async () => {
    const reply = await gw.call('POST', '/pipelines/idempotent', {
      json: {
        idempotencyKey: randomUUID(),
        name: 'context',
        stages: stages('s', 1),
        pipelineContextItems: [
          { key: 'a', value: '1' },
          { key: 'b', value: '2' },
          { key: 'a', value: '3', valueType: 'int' },
        ],
        pipelineKeywords: [
          { key: 'k', value: 'v1' },
          { key: 'k', value: 'v2' },
        ],
      },
    });
    expect(reply.status, reply.text).toBe(201);
    const expected = {
      pipelineContextItems: [
        { key: 'a', value: '3', valueType: 'int', isSensitive: false, isDeleted: false },
        { key: 'b', value: '2', valueType: null, isSensitive: false, isDeleted: false },
      ],
      pipelineKeywords: [
        { key: 'k', value: 'v1' },
        { key: 'k', value: 'v2' },
      ],
    };
    expect(reply.body.pipeline).toMatchObject(expected);
    expect((await gw.call('GET', `/pipelines/${reply.body.pipeline.id}`)).body).toMatchObject(expected);
  });

  it('a key that is already bound inserts nothing, whatever the intent', async () => {
    const idempotencyKey = randomUUID();
    const body = { idempotencyKey, name: 'bound', stages: stages('s', 2) };
    expect((await gw.call('POST', '/pipelines/idempotent', { json: body })).status).toBe(201);
    const counts = async () => ({
      pipelines: await gw.db.pipeline.count(),
      stages: await gw.db.stage.count(),
      keys: await gw.db.idempotencyKey.count(),
    });
    const before = await counts();
    expect((await gw.call('POST', '/pipelines/idempotent', { json: body })).status).toBe(200);
    const conflict = await gw.call('POST', '/pipelines/idempotent', {
      json: { ...body, stages: stages('t', 3) },
    });
    expect(conflict.status).toBe(409);
    expect(await counts()).toEqual(before);
  });

  it('a lone UTF-16 surrogate is a 400 at each field that holds one, and nothing is stored (issue 10)', async () => {
    const counts = async () => ({ pipelines: await gw.db.pipeline.count(), keys: await gw.db.idempotencyKey.count() });
    const before = await counts();
    const reply = await gw.call('POST', '/pipelines/idempotent', {
      raw: `{"idempotencyKey":"${randomUUID()}","name":"n\\ud800","stages":[{"stageName":"s\\udc00","stageHandlerName":"h","input":"i\\ud800"}],"pipelineContextItems":[{"key":"k","value":"v\\ud800"}]}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body.errors.map((e: { field: string }) => e.field)).toEqual([
      '/name',
      '/stages/0/stageName',
      '/stages/0/input',
      '/pipelineContextItems/0/value',
    ]);
    expect(await counts()).toEqual(before);
  });
});
