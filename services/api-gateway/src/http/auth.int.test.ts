// Every X-API-Key route answers 401 unauthorized for a missing, unknown, disabled or expired key, and
// changes nothing (api-spec "Authentication", addendum §2, §3).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, problemDetailsSchema } from '@po/contracts';
import { runAdmin } from '../admin/commands.js';
import { startGateway, type Gateway, type Reply } from '../testing/harness.js';

let gw: Gateway;
let disabledKey: string;
let expiredKey: string;
let pipelineId: number;
let stageId: number;
const idempotencyKey = `auth-${randomUUID()}`;

beforeAll(async () => {
  gw = await startGateway();
  const created = await gw.call('POST', '/pipelines/idempotent', {
    json: { idempotencyKey, name: 'auth', stages: [{ stageName: 'wait', stageHandlerName: 'h' }] },
  });
  expect(created.status, created.text).toBe(201);
  pipelineId = created.body.pipeline.id;
  stageId = created.body.pipeline.stages[0].id;
  await gw.db.stage.update({
    where: { id: BigInt(stageId) },
    data: { status: 'WaitingForApproval' },
  });

  const disabled = (await runAdmin(gw.db, [
    'apps',
    'keys',
    'create',
    '--app',
    String(gw.appA.id),
  ])) as { apiKey: string; keyId: number };
  // The key works before it is disabled.
  expect((await gw.call('GET', `/pipelines/${pipelineId}`, { key: disabled.apiKey })).status).toBe(
    200,
  );
  const out = await runAdmin(gw.db, [
    'apps',
    'keys',
    'disable',
    '--key-id',
    String(disabled.keyId),
  ]);
  expect(out).toEqual({ keyId: disabled.keyId, disabled: true });
  disabledKey = disabled.apiKey;

  expiredKey = await gw.invalidKey('expired');
});
afterAll(async () => {
  await gw?.close();
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
function expectUnauthorized(reply: Reply): void {
  expect(reply.status, reply.text).toBe(401);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body).toMatchObject({
    status: 401,
    code: 'unauthorized',
    type: 'urn:problem-type:pipeline-orchestration:unauthorized',
  });
  expect(reply.body.errors).toBeUndefined();
}

const routes = [
  {
    route: 'POST /pipelines/idempotent',
    send: (key: string | null) =>
      gw.call('POST', '/pipelines/idempotent', {
        key,
        json: {
          idempotencyKey: randomUUID(),
          name: 'x',
          stages: [{ stageName: 's', stageHandlerName: 'h' }],
        },
      }),
  },
  {
    route: 'POST /pipelines/by-idempotency-key',
    send: (key: string | null) =>
      gw.call('POST', '/pipelines/by-idempotency-key', { key, json: { idempotencyKey } }),
  },
  {
    route: 'GET /pipelines/{pipelineId}',
    send: (key: string | null) => gw.call('GET', `/pipelines/${pipelineId}`, { key }),
  },
  {
    route: 'POST /pipelines/{pipelineId}/cancel',
    send: (key: string | null) => gw.call('POST', `/pipelines/${pipelineId}/cancel`, { key }),
  },
  {
    route: 'POST /pipelines/{pipelineId}/stages',
    send: (key: string | null) =>
      gw.call('POST', `/pipelines/${pipelineId}/stages`, {
        key,
        json: { stages: [{ stageName: 'more', stageHandlerName: 'h' }] },
      }),
  },
  {
    route: 'POST /stages/{stageId}/resume',
    send: (key: string | null) =>
      gw.call('POST', `/stages/${stageId}/resume`, { key, json: { approved: true } }),
  },
];

const keys = [
  { which: 'a missing key', key: () => null },
  { which: 'an empty key', key: () => '' },
  { which: 'an unknown key', key: () => `pos_${'A'.repeat(43)}` },
  {
    which: "another key's hash as the key",
    key: () => 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  },
  { which: 'a disabled key', key: () => disabledKey },
  { which: 'an expired key', key: () => expiredKey },
];

describe.each(routes)('$route', ({ send }) => {
  it.each(keys)('$which is a 401 unauthorized', async ({ key }) => {
    expectUnauthorized(await send(key()));
  });
});

describe('refused requests change nothing', () => {
  it('after every 401 the pipeline is unchanged, its stage still waits and no pipeline was created', async () => {
    for (const { send } of routes) for (const { key } of keys) await send(key());
    const read = await gw.call('GET', `/pipelines/${pipelineId}`);
    expect(read.body).toMatchObject({
      status: 'NotStarted',
      stageStatuses: ['WaitingForApproval'],
    });
    expect(await gw.db.pipeline.count()).toBe(1);
  });

  it('a valid key of the application passes the same routes (the 401s were about the key)', async () => {
    const statuses = [];
    for (const { send } of routes) statuses.push((await send(gw.appA.key)).status);
    // The cancel (200) makes the pipeline terminal, so the append and the resume after it are 409s.
    expect(statuses).toEqual([201, 200, 200, 200, 409, 409]);
  });
});
