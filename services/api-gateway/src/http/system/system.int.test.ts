// GET /version and the legacy POST /logs (api-spec "System"; addendum §2, §5.7, §13 redaction, §16).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compile,
  logResponseSchema,
  problemDetailsSchema,
  versionInfoSchema,
  type FieldError,
  type JsonSchema,
} from '@po/contracts';
import { runAdmin } from '../../admin/commands.js';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
function expectJson(reply: Reply, status: number, schema: JsonSchema) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  const checked = compile(schema, { normalise: false })(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body;
}
function expectValidationProblem(reply: Reply, fields: string[]): void {
  expect(reply.status, reply.text).toBe(400);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body.code).toBe('validation_failed');
  expect([...new Set((reply.body.errors as FieldError[]).map((e) => e.field))].sort()).toEqual(
    [...fields].sort(),
  );
}

const log = (json: unknown, key: string | null = null) => gw.call('POST', '/logs', { json, key });

describe('GET /version', () => {
  it('returns the server version (SemVer core 0.5.0) and licence tier community, without credentials', async () => {
    for (const key of [null, 'pos_invalid']) {
      const body = expectJson(await gw.call('GET', '/version', { key }), 200, versionInfoSchema);
      expect(body.version).toMatch(/^0\.5\.0([-+].*)?$/);
      expect(body.licenseTier).toBe('community');
    }
  });
});

describe('POST /logs', () => {
  it('stores a line and answers 200 {id, applicationId, stored: true}; applicationId is null without a body key', async () => {
    const message = `plain line ${randomUUID()}`;
    const body = expectJson(await log({ message }), 200, logResponseSchema);
    expect(body).toEqual({ id: expect.any(Number), applicationId: null, stored: true });
    const row = await gw.db.systemLog.findUniqueOrThrow({ where: { id: BigInt(body.id) } });
    expect(row).toMatchObject({
      message,
      applicationId: null,
      logLevel: 'Information',
      pipelineId: null,
      stageId: null,
    });
  });

  it('a valid body apiKey attaches the line to its application', async () => {
    const body = expectJson(
      await log({ message: 'with key', apiKey: gw.appB.key, logLevel: 'Debug' }),
      200,
      logResponseSchema,
    );
    expect(body.applicationId).toBe(gw.appB.id);
    const row = await gw.db.systemLog.findUniqueOrThrow({ where: { id: BigInt(body.id) } });
    expect(row).toMatchObject({ applicationId: gw.appB.id, logLevel: 'Debug' });
  });

  it('an unknown body apiKey stores an unscoped line (applicationId null), never a 401', async () => {
    const body = expectJson(
      await log({ message: 'unknown key', apiKey: 'pos_unknown' }),
      200,
      logResponseSchema,
    );
    expect(body.applicationId).toBeNull();
  });

  it('the X-API-Key header does not scope a log line; only the body key decides', async () => {
    const body = expectJson(
      await log({ message: 'header only' }, gw.appA.key),
      200,
      logResponseSchema,
    );
    expect(body.applicationId).toBeNull();
    expect(
      expectJson(
        await log({ message: 'bad header', apiKey: gw.appA.key }, 'pos_bad'),
        200,
        logResponseSchema,
      ).applicationId,
    ).toBe(gw.appA.id);
  });

  it('an EXPIRED key still attaches the line (the lookup ignores expiry)', async () => {
    const expired = { apiKey: await gw.invalidKey('expired') };
    // The key really is expired: an X-API-Key route refuses it.
    expect((await gw.call('GET', '/pipelines/1', { key: expired.apiKey })).status).toBe(401);
    const body = expectJson(
      await log({ message: 'expired key', apiKey: expired.apiKey }),
      200,
      logResponseSchema,
    );
    expect(body.applicationId).toBe(gw.appA.id);
  });

  it('a disabled key stores an unscoped line (applicationId null), never a 401', async () => {
    const key = (await runAdmin(gw.db, [
      'apps',
      'keys',
      'create',
      '--app',
      String(gw.appA.id),
    ])) as { apiKey: string; keyId: number };
    expect(
      expectJson(
        await log({ message: 'before disable', apiKey: key.apiKey }),
        200,
        logResponseSchema,
      ).applicationId,
    ).toBe(gw.appA.id);
    await runAdmin(gw.db, ['apps', 'keys', 'disable', '--key-id', String(key.keyId)]);
    const body = expectJson(
      await log({ message: 'disabled key', apiKey: key.apiKey }),
      200,
      logResponseSchema,
    );
    expect(body.applicationId).toBeNull();
  });

  it('a missing, empty or non-string message is a 400 at /message', async () => {
    const before = await gw.db.systemLog.count();
    for (const json of [
      {},
      { message: '' },
      { message: null },
      { message: 42 },
      { apiKey: gw.appA.key },
    ]) {
      expectValidationProblem(await log(json), ['/message']);
    }
    expect(await gw.db.systemLog.count()).toBe(before);
  });

  it('message may have 65536 bytes; 65537 is a 400 at /message', async () => {
    const at = 'é'.repeat(32_768);
    const body = expectJson(await log({ message: at }), 200, logResponseSchema);
    expect(
      (await gw.db.systemLog.findUniqueOrThrow({ where: { id: BigInt(body.id) } })).message,
    ).toBe(at);
    expectValidationProblem(await log({ message: `${at}a` }), ['/message']);
  });

  it('other fields are validated: logLevel 1..32, ids ≥ 1, keywords, created with an offset', async () => {
    expectValidationProblem(await log({ message: 'm', logLevel: '' }), ['/logLevel']);
    expectValidationProblem(await log({ message: 'm', logLevel: 'x'.repeat(33) }), ['/logLevel']);
    expectValidationProblem(await log({ message: 'm', pipelineId: 0, stageId: '3' }), [
      '/pipelineId',
      '/stageId',
    ]);
    expectValidationProblem(await log({ message: 'm', keywords: [{ key: 'k' }] }), [
      '/keywords/0/value',
    ]);
    expectValidationProblem(await log({ message: 'm', created: '2025-03-01T12:00:00' }), [
      '/created',
    ]);
    const body = expectJson(
      await log({
        message: 'm',
        logLevel: 'x'.repeat(32),
        pipelineId: 987654321,
        stageId: 123,
        keywords: [{ key: 'k', value: 'v' }],
        created: '2025-03-01T13:00:00+01:00',
      }),
      200,
      logResponseSchema,
    );
    const row = await gw.db.systemLog.findUniqueOrThrow({ where: { id: BigInt(body.id) } });
    expect(row).toMatchObject({
      pipelineId: 987654321n,
      stageId: 123n,
      keywords: [{ key: 'k', value: 'v' }],
    });
    expect(row.created.toISOString()).toBe('2025-03-01T12:00:00.000Z');
  });

  it('malformed JSON or a body that is not an object is a 400 for the whole body', async () => {
    for (const raw of ['{"message":', '[]', '"text"', '12', 'null']) {
      expectValidationProblem(await gw.call('POST', '/logs', { raw, key: null }), ['']);
    }
  });

  it("a line scoped to a pipeline has that pipeline's sensitive values redacted in the stored row", async () => {
    const secret = `log-secret-${randomUUID()}`;
    const created = await gw.call('POST', '/pipelines', {
      key: null,
      json: {
        apiKey: gw.appA.key,
        name: 'secrets',
        stages: [{ stageName: 's', stageHandlerName: 'h' }],
        pipelineContextItems: [
          { key: 'password', value: secret, isSensitive: true },
          { key: 'visible', value: 'not-secret-value' },
        ],
      },
    });
    expect(created.status).toBe(200);
    const body = expectJson(
      await log({
        message: `login with ${secret} for not-secret-value, again ${secret}`,
        pipelineId: created.body.id,
        apiKey: gw.appA.key,
      }),
      200,
      logResponseSchema,
    );
    const row = await gw.db.systemLog.findUniqueOrThrow({ where: { id: BigInt(body.id) } });
    expect(row.message).toBe('login with [REDACTED] for not-secret-value, again [REDACTED]');
    expect(row.pipelineId).toBe(BigInt(created.body.id));
    expect(gw.logLines.filter((line) => line.includes(secret))).toEqual([]);
  });
});
