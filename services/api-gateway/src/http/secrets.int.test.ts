// Sensitive context values are returned only as "[REDACTED]" (isSensitive kept) and never appear in
// any response or log line of the gateway (api-spec PipelineResponse, ContextItem; addendum §4, §13).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  idempotentPipelineCreateResponseSchema,
  pipelineResponseSchema,
} from '@po/contracts';
import { startGateway, type CallOptions, type Gateway, type Reply } from '../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const secret = `s3cr3t-${randomUUID()}`;
const replies: { what: string; text: string }[] = [];
async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const reply = await gw.call(method, path, options);
  replies.push({ what: `${method} ${path} → ${reply.status}`, text: reply.text });
  return reply;
}
function shapeErrors(schema: Parameters<typeof compile>[0], body: unknown) {
  const checked = compile(schema, { normalise: false })(body);
  return checked.ok ? [] : checked.errors;
}

const definition = {
  name: 'with secrets',
  stages: [
    { stageName: 'approve', stageHandlerName: 'h' },
    { stageName: 'after', stageHandlerName: 'h' },
  ],
  pipelineContextItems: [
    { key: 'password', value: secret, valueType: 'string', isSensitive: true },
    { key: 'region', value: 'eu-west-1' },
  ],
};
const expectedContext = [
  {
    key: 'password',
    value: '[REDACTED]',
    valueType: 'string',
    isSensitive: true,
    isDeleted: false,
  },
  { key: 'region', value: 'eu-west-1', valueType: null, isSensitive: false, isDeleted: false },
];

describe('sensitive context values', () => {
  it('are redacted in the legacy creation response and in GET, and stored for workers', async () => {
    const created = await call('POST', '/pipelines', {
      key: null,
      json: { apiKey: gw.appA.key, ...definition },
    });
    expect(created.status).toBe(200);
    expect(shapeErrors(pipelineResponseSchema, created.body)).toEqual([]);
    expect(created.body.pipelineContextItems).toEqual(expectedContext);
    const read = await call('GET', `/pipelines/${created.body.id}`);
    expect(read.body.pipelineContextItems).toEqual(expectedContext);
    // The real value is kept: workers receive it at dispatch (addendum §5.1).
    const stored = await gw.db.contextItem.findMany({
      where: { pipelineId: BigInt(created.body.id), isSensitive: true },
    });
    expect(stored.map((c) => c.value)).toEqual([secret]);
  });

  it('are redacted in the idempotent 201, the 200 for the same intent, the lookup and the 409', async () => {
    const idempotencyKey = randomUUID();
    const first = await call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, ...definition },
    });
    const again = await call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, ...definition, traceId: 'retry' },
    });
    expect([first.status, again.status]).toEqual([201, 200]);
    for (const reply of [first, again]) {
      expect(shapeErrors(idempotentPipelineCreateResponseSchema, reply.body)).toEqual([]);
      expect(reply.body.pipeline.pipelineContextItems).toEqual(expectedContext);
    }
    const lookup = await call('POST', '/pipelines/by-idempotency-key', {
      json: { idempotencyKey },
    });
    expect(lookup.body.pipelineContextItems).toEqual(expectedContext);
    const conflict = await call('POST', '/pipelines/idempotent', {
      json: { idempotencyKey, ...definition, name: 'other' },
    });
    expect(conflict.status).toBe(409);
  });

  it('are redacted in append, resume, cancel and log responses and in stored log lines', async () => {
    const created = await call('POST', '/pipelines', {
      key: null,
      json: { apiKey: gw.appA.key, ...definition },
    });
    const pipelineId = created.body.id as number;
    const stageId = created.body.stages[0].id as number;
    expect(
      (
        await call('POST', `/pipelines/${pipelineId}/stages`, {
          json: {
            stages: [
              { stageName: 'added', stageHandlerName: 'h', input: { note: 'uses the password' } },
            ],
          },
        })
      ).status,
    ).toBe(200);
    await gw.db.stage.update({
      where: { id: BigInt(stageId) },
      data: { status: 'WaitingForApproval' },
    });
    expect(
      (
        await call('POST', `/stages/${stageId}/resume`, {
          json: { approved: false, rejectionReason: `do not use ${secret}` },
        })
      ).status,
    ).toBe(204);
    const logged = await call('POST', '/logs', {
      key: null,
      json: { message: `connecting with ${secret}`, pipelineId, apiKey: gw.appA.key },
    });
    expect(logged.status).toBe(200);
    const cancelled = await call('POST', `/pipelines/${pipelineId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.pipelineContextItems).toEqual(expectedContext);
    expect(cancelled.body.stages[0].logs.map((l: { message: string }) => l.message)).toEqual([
      'Rejected: do not use [REDACTED]',
    ]);
    const storedLog = await gw.db.systemLog.findUniqueOrThrow({
      where: { id: BigInt(logged.body.id) },
    });
    expect(storedLog.message).toBe('connecting with [REDACTED]');
    // Failed and refused calls too.
    await call('POST', `/pipelines/${pipelineId}/cancel`);
    await call('GET', `/pipelines/${pipelineId}`, { key: gw.appB.key });
  });

  it('appear in no response body and no log line of the gateway', () => {
    expect(replies.length).toBeGreaterThan(10);
    expect(replies.filter((r) => r.text.includes(secret)).map((r) => r.what)).toEqual([]);
    expect(gw.logLines.length).toBeGreaterThan(0);
    expect(gw.logLines.filter((line) => line.includes(secret))).toEqual([]);
  });
});
