// Every boundary of the Limits table for pipeline creation, lookup and append: N is accepted and
// stored as sent, N+1 is a 400 at the field's JSON Pointer (api-spec "Limits", addendum §1, §6).
// "Characters" are code points (an astral "😀" counts once); "bytes" are UTF-8 bytes ("é" is two).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appendStagesResponseSchema,
  compile,
  idempotentPipelineCreateResponseSchema,
  pipelineResponseSchema,
  problemDetailsSchema,
  type FieldError,
  type JsonSchema,
} from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
function shapeErrors(schema: JsonSchema, body: unknown): FieldError[] {
  const checked = compile(schema, { normalise: false })(body);
  return checked.ok ? [] : checked.errors;
}
function expectJson(reply: Reply, status: number, schema: JsonSchema) {
  expect(reply.status, reply.text.slice(0, 500)).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(shapeErrors(schema, reply.body)).toEqual([]);
  return reply.body;
}
function expectValidationProblem(reply: Reply, fields: string[]): void {
  expect(reply.status, reply.text.slice(0, 500)).toBe(400);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body.code).toBe('validation_failed');
  expect([...new Set((reply.body.errors as FieldError[]).map((e) => e.field))].sort()).toEqual(
    [...fields].sort(),
  );
}

/** n code points, each an astral character (2 UTF-16 units, 4 UTF-8 bytes). */
const chars = (n: number) => '😀'.repeat(n);
/** n UTF-8 bytes made of two-byte "é" (plus one "a" when n is odd): far fewer characters than bytes. */
const bytes = (n: number) => 'é'.repeat(Math.floor(n / 2)) + (n % 2 ? 'a' : '');
const stage = (stageName = 'stage', extra: Record<string, unknown> = {}) => ({
  stageName,
  stageHandlerName: 'handler',
  ...extra,
});
const stages = (n: number) => Array.from({ length: n }, (_, i) => stage(`s${i}`));
const items = <T>(n: number, make: (i: number) => T) =>
  Array.from({ length: n }, (_, i) => make(i));

interface Boundary {
  limit: string;
  /** Definition members at the limit N (accepted). */
  at: Record<string, unknown>;
  /** Definition members at N+1 (or another out-of-range value). */
  over: Record<string, unknown>;
  field: string;
  /** What the accepted pipeline must show. */
  stored: (p: {
    name: string;
    traceId: string;
    stages: { name: string; stageHandlerName: string; description: string | null; input: string }[];
    pipelineKeywords: unknown[];
    pipelineContextItems: { value: string }[];
  }) => void;
}

const base = { name: 'limits', stages: [stage('first')] };

const boundaries: Boundary[] = [
  {
    limit: 'pipeline name 255 characters',
    at: { name: chars(255) },
    over: { name: chars(256) },
    field: '/name',
    stored: (p) => expect(p.name).toBe(chars(255)),
  },
  {
    limit: 'pipeline name at least 1 character',
    at: { name: 'x' },
    over: { name: '' },
    field: '/name',
    stored: (p) => expect(p.name).toBe('x'),
  },
  {
    limit: '100 stages per pipeline',
    at: { stages: stages(100) },
    over: { stages: stages(101) },
    field: '/stages',
    stored: (p) => expect(p.stages).toHaveLength(100),
  },
  {
    limit: 'at least 1 stage',
    at: { stages: stages(1) },
    over: { stages: [] },
    field: '/stages',
    stored: (p) => expect(p.stages).toHaveLength(1),
  },
  {
    limit: 'stageName 255 characters',
    at: { stages: [stage('first'), stage(chars(255))] },
    over: { stages: [stage('first'), stage(chars(256))] },
    field: '/stages/1/stageName',
    stored: (p) => expect(p.stages[1]!.name).toBe(chars(255)),
  },
  {
    limit: 'stageName at least 1 character',
    at: { stages: [stage('y')] },
    over: { stages: [stage('')] },
    field: '/stages/0/stageName',
    stored: (p) => expect(p.stages[0]!.name).toBe('y'),
  },
  {
    limit: 'stageHandlerName 300 characters',
    at: { stages: [stage('first', { stageHandlerName: chars(300) })] },
    over: { stages: [stage('first', { stageHandlerName: chars(301) })] },
    field: '/stages/0/stageHandlerName',
    stored: (p) => expect(p.stages[0]!.stageHandlerName).toBe(chars(300)),
  },
  {
    limit: 'description 255 characters',
    at: { stages: [stage('first', { description: chars(255) })] },
    over: { stages: [stage('first', { description: chars(256) })] },
    field: '/stages/0/description',
    stored: (p) => expect(p.stages[0]!.description).toBe(chars(255)),
  },
  {
    limit: 'stage input 262144 bytes',
    at: { stages: [stage('first', { input: bytes(262_144) })] },
    over: { stages: [stage('first', { input: bytes(262_145) })] },
    field: '/stages/0/input',
    stored: (p) => expect(p.stages[0]!.input).toBe(bytes(262_144)),
  },
  {
    limit: 'stage input is counted in bytes, not characters (131073 "é" = 262146 bytes)',
    at: { stages: [stage('first', { input: 'é'.repeat(131_072) })] },
    over: { stages: [stage('first', { input: 'é'.repeat(131_073) })] },
    field: '/stages/0/input',
    stored: (p) => expect(p.stages[0]!.input).toHaveLength(131_072),
  },
  {
    limit: '64 pipeline keywords',
    at: { pipelineKeywords: items(64, (i) => ({ key: `k${i}`, value: 'v' })) },
    over: { pipelineKeywords: items(65, (i) => ({ key: `k${i}`, value: 'v' })) },
    field: '/pipelineKeywords',
    stored: (p) => expect(p.pipelineKeywords).toHaveLength(64),
  },
  {
    limit: 'keyword key 300 characters',
    at: { pipelineKeywords: [{ key: chars(300), value: 'v' }] },
    over: {
      pipelineKeywords: [
        { key: 'ok', value: 'v' },
        { key: chars(301), value: 'v' },
      ],
    },
    field: '/pipelineKeywords/1/key',
    stored: (p) => expect(p.pipelineKeywords).toEqual([{ key: chars(300), value: 'v' }]),
  },
  {
    limit: 'keyword key at least 1 character',
    at: { pipelineKeywords: [{ key: 'k', value: 'v' }] },
    over: { pipelineKeywords: [{ key: '', value: 'v' }] },
    field: '/pipelineKeywords/0/key',
    stored: (p) => expect(p.pipelineKeywords).toEqual([{ key: 'k', value: 'v' }]),
  },
  {
    limit: 'keyword value 300 characters',
    at: { pipelineKeywords: [{ key: 'k', value: chars(300) }] },
    over: { pipelineKeywords: [{ key: 'k', value: chars(301) }] },
    field: '/pipelineKeywords/0/value',
    stored: (p) => expect(p.pipelineKeywords).toEqual([{ key: 'k', value: chars(300) }]),
  },
  {
    limit: 'keyword value at least 1 character',
    at: { pipelineKeywords: [{ key: 'k', value: 'v' }] },
    over: { pipelineKeywords: [{ key: 'k', value: '' }] },
    field: '/pipelineKeywords/0/value',
    stored: (p) => expect(p.pipelineKeywords).toEqual([{ key: 'k', value: 'v' }]),
  },
  {
    limit: '64 context items',
    at: { pipelineContextItems: items(64, (i) => ({ key: `c${i}`, value: 'v' })) },
    over: { pipelineContextItems: items(65, (i) => ({ key: `c${i}`, value: 'v' })) },
    field: '/pipelineContextItems',
    stored: (p) => expect(p.pipelineContextItems).toHaveLength(64),
  },
  {
    limit: 'context key 300 characters',
    at: { pipelineContextItems: [{ key: chars(300), value: 'v' }] },
    over: { pipelineContextItems: [{ key: chars(301), value: 'v' }] },
    field: '/pipelineContextItems/0/key',
    stored: (p) =>
      expect(p.pipelineContextItems).toEqual([expect.objectContaining({ key: chars(300) })]),
  },
  {
    limit: 'context key at least 1 character',
    at: { pipelineContextItems: [{ key: 'c', value: 'v' }] },
    over: { pipelineContextItems: [{ key: '', value: 'v' }] },
    field: '/pipelineContextItems/0/key',
    stored: (p) => expect(p.pipelineContextItems).toEqual([expect.objectContaining({ key: 'c' })]),
  },
  {
    limit: 'context value 65536 bytes',
    at: { pipelineContextItems: [{ key: 'c', value: bytes(65_536) }] },
    over: { pipelineContextItems: [{ key: 'c', value: bytes(65_537) }] },
    field: '/pipelineContextItems/0/value',
    stored: (p) => expect(p.pipelineContextItems[0]!.value).toBe(bytes(65_536)),
  },
  {
    limit: 'context value is counted in bytes, not characters (32769 "é")',
    at: { pipelineContextItems: [{ key: 'c', value: 'é'.repeat(32_768) }] },
    over: { pipelineContextItems: [{ key: 'c', value: 'é'.repeat(32_769) }] },
    field: '/pipelineContextItems/0/value',
    stored: (p) => expect(p.pipelineContextItems[0]!.value).toHaveLength(32_768),
  },
  {
    limit: 'traceId 36 characters',
    at: { traceId: 't'.repeat(36) },
    over: { traceId: 't'.repeat(37) },
    field: '/traceId',
    stored: (p) => expect(p.traceId).toBe('t'.repeat(36)),
  },
];

const creations = [
  {
    route: 'POST /pipelines',
    ok: 200,
    send: (def: Record<string, unknown>) =>
      gw.call('POST', '/pipelines', { json: { apiKey: gw.appA.key, ...def }, key: null }),
    pipelineOf: (b: { id: number }) => b,
  },
  {
    route: 'POST /pipelines/idempotent',
    ok: 201,
    send: (def: Record<string, unknown>) =>
      gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: randomUUID(), ...def } }),
    pipelineOf: (b: { pipeline: { id: number } }) => b.pipeline,
  },
] as const;

describe.each(creations)('$route limits', ({ ok, send, pipelineOf }) => {
  const schema = ok === 200 ? pipelineResponseSchema : idempotentPipelineCreateResponseSchema;

  it.each(boundaries)(
    '$limit: N is accepted and stored, beyond it is a 400 at $field',
    async ({ at, over, field, stored }) => {
      const accepted = expectJson(await send({ ...base, ...at }), ok, schema);
      const pipeline = pipelineOf(accepted as never) as { id: number };
      stored(pipeline as never);
      // The stored pipeline reads back the same (nothing truncated on the way to the database).
      stored((await gw.call('GET', `/pipelines/${pipeline.id}`)).body);

      const before = await gw.db.pipeline.count();
      expectValidationProblem(await send({ ...base, ...over }), [field]);
      expect(await gw.db.pipeline.count()).toBe(before);
    },
  );
});

describe('idempotencyKey limits', () => {
  it('idempotencyKey 200 characters is accepted by creation and lookup; 201 is a 400 at /idempotencyKey for both', async () => {
    const key = '😀'.repeat(200);
    const created = expectJson(
      await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: key, ...base } }),
      201,
      idempotentPipelineCreateResponseSchema,
    );
    expect(created.pipeline.idempotencyKey).toBe(key);
    const found = expectJson(
      await gw.call('POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey: key } }),
      200,
      pipelineResponseSchema,
    );
    expect(found.id).toBe(created.pipeline.id);

    const tooLong = '😀'.repeat(201);
    expectValidationProblem(
      await gw.call('POST', '/pipelines/idempotent', {
        json: { idempotencyKey: tooLong, ...base },
      }),
      ['/idempotencyKey'],
    );
    expectValidationProblem(
      await gw.call('POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey: tooLong } }),
      ['/idempotencyKey'],
    );
  });

  it('an empty idempotencyKey is a 400 at /idempotencyKey for creation and lookup', async () => {
    expectValidationProblem(
      await gw.call('POST', '/pipelines/idempotent', { json: { idempotencyKey: '', ...base } }),
      ['/idempotencyKey'],
    );
    expectValidationProblem(
      await gw.call('POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey: '' } }),
      ['/idempotencyKey'],
    );
  });
});

describe('POST /pipelines/{pipelineId}/stages limits', () => {
  async function pipelineWith(count: number): Promise<number> {
    const reply = await gw.call('POST', '/pipelines', {
      json: { apiKey: gw.appA.key, name: 'append limits', stages: stages(count) },
      key: null,
    });
    expect(reply.status, reply.text.slice(0, 300)).toBe(200);
    return reply.body.id as number;
  }
  const append = (id: number, items: unknown[]) =>
    gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: items } });

  const stageBoundaries = [
    {
      limit: 'stageName 255 characters',
      at: stage(chars(255)),
      over: stage(chars(256)),
      field: '/stages/0/stageName',
    },
    {
      limit: 'stageName at least 1 character',
      at: stage('z'),
      over: stage(''),
      field: '/stages/0/stageName',
    },
    {
      limit: 'stageHandlerName 300 characters',
      at: stage('a', { stageHandlerName: chars(300) }),
      over: stage('a', { stageHandlerName: chars(301) }),
      field: '/stages/0/stageHandlerName',
    },
    {
      limit: 'description 255 characters',
      at: stage('a', { description: chars(255) }),
      over: stage('a', { description: chars(256) }),
      field: '/stages/0/description',
    },
    {
      limit: 'string input 262144 bytes',
      at: stage('a', { input: bytes(262_144) }),
      over: stage('a', { input: bytes(262_145) }),
      field: '/stages/0/input',
    },
    {
      limit: 'string input counted in bytes (131073 "é")',
      at: stage('a', { input: 'é'.repeat(131_072) }),
      over: stage('a', { input: 'é'.repeat(131_073) }),
      field: '/stages/0/input',
    },
    // {"v":"…"} is 8 bytes of JSON around the string.
    {
      limit: 'an object input, as compact JSON, 262144 bytes',
      at: stage('a', { input: { v: bytes(262_136) } }),
      over: stage('a', { input: { v: bytes(262_137) } }),
      field: '/stages/0/input',
    },
  ];

  it.each(stageBoundaries)(
    '$limit: N is appended, beyond it is a 400 at $field and nothing is appended',
    async ({ at, over, field }) => {
      const id = await pipelineWith(1);
      const accepted = expectJson(await append(id, [at]), 200, appendStagesResponseSchema);
      expect(accepted.stages).toHaveLength(1);
      expect(accepted.stages[0]).toMatchObject({
        name: at.stageName,
        stageHandlerName: at.stageHandlerName,
      });
      if ('input' in at) expect(Buffer.byteLength(accepted.stages[0].input, 'utf8')).toBe(262_144);
      expectValidationProblem(await append(id, [over]), [field]);
      expect(await gw.db.stage.count({ where: { pipelineId: BigInt(id) } })).toBe(2);
    },
  );

  it('a pipeline may reach 100 stages by appends; one more is a 400 at /stages', async () => {
    const id = await pipelineWith(60);
    expectValidationProblem(await append(id, stages(41)), ['/stages']);
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(id) } })).toBe(60);
    expect(
      expectJson(await append(id, stages(40)), 200, appendStagesResponseSchema).stages,
    ).toHaveLength(40);
    expectValidationProblem(await append(id, [stage('one too many')]), ['/stages']);
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(id) } })).toBe(100);
  });

  it('more than 100 stages in one append, or none, is a 400 at /stages', async () => {
    const id = await pipelineWith(1);
    expectValidationProblem(await append(id, stages(101)), ['/stages']);
    expectValidationProblem(await append(id, []), ['/stages']);
  });
});
