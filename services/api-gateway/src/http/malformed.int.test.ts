// Malformed input never gets a 500: every 4xx is a problem+json body with the right code and field,
// bodies over API_MAX_BODY_BYTES are a 413 whether sized or streamed, and the check order of
// addendum §3 holds (route → 401 → path parameters → 413 → body validation → 404/403 → 409).
import { request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, problemDetailsSchema, type FieldError } from '@po/contracts';
import { startGateway, type Gateway, type Reply } from '../testing/harness.js';

const LIMIT = 4096;
let gw: Gateway;
let small: Gateway;
beforeAll(async () => {
  [gw, small] = await Promise.all([startGateway(), startGateway({ maxBodyBytes: LIMIT })]);
});
afterAll(async () => {
  await Promise.all([gw?.close(), small?.close()]);
});

const problemShape = compile(problemDetailsSchema, { normalise: false });
function expectProblem(
  reply: Pick<Reply, 'status' | 'headers' | 'body' | 'text'>,
  status: number,
  code: string,
  fields?: string[],
): void {
  expect(reply.status, reply.text.slice(0, 500)).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body).toMatchObject({
    status,
    code,
    type: `urn:problem-type:pipeline-orchestration:${code}`,
  });
  if (fields !== undefined) {
    expect([...new Set((reply.body.errors as FieldError[]).map((e) => e.field))].sort()).toEqual(
      [...fields].sort(),
    );
  }
}

const stage = (extra: Record<string, unknown> = {}) => ({
  stageName: 's',
  stageHandlerName: 'h',
  ...extra,
});
const definition = (extra: Record<string, unknown> = {}) => ({
  name: 'malformed',
  stages: [stage()],
  ...extra,
});

async function legacyPipeline(g: Gateway, key: string): Promise<number> {
  const reply = await g.call('POST', '/pipelines', {
    json: { apiKey: key, ...definition() },
    key: null,
  });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.id as number;
}
async function waitingStage(g: Gateway, key: string): Promise<number> {
  const reply = await g.call('POST', '/pipelines', {
    json: { apiKey: key, ...definition() },
    key: null,
  });
  const stageId = reply.body.stages[0].id as number;
  await g.db.stage.update({
    where: { id: BigInt(stageId) },
    data: { status: 'WaitingForApproval' },
  });
  return stageId;
}

/** A request whose body is streamed with Transfer-Encoding: chunked (no Content-Length). */
function streamed(
  g: Gateway,
  method: string,
  path: string,
  chunks: string[],
  headers: Record<string, string>,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${g.url}${path}`, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (typeof value === 'string') responseHeaders.set(name, value);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = null;
        }
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, text, body });
      });
    });
    // The server may answer (413) before the whole body is sent; a reset after that is not a failure.
    req.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err),
    );
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('bodies that are not JSON objects', () => {
  const routes = [
    { route: 'POST /pipelines', path: () => '/pipelines', key: () => null },
    {
      route: 'POST /pipelines/idempotent',
      path: () => '/pipelines/idempotent',
      key: () => gw.appA.key,
    },
    {
      route: 'POST /pipelines/by-idempotency-key',
      path: () => '/pipelines/by-idempotency-key',
      key: () => gw.appA.key,
    },
    {
      route: 'POST /pipelines/{id}/stages',
      path: () => `/pipelines/${appendTarget}/stages`,
      key: () => gw.appA.key,
    },
    {
      route: 'POST /stages/{id}/resume',
      path: () => `/stages/${resumeTarget}/resume`,
      key: () => gw.appA.key,
    },
    { route: 'POST /logs', path: () => '/logs', key: () => null },
  ];
  let appendTarget: number;
  let resumeTarget: number;
  beforeAll(async () => {
    appendTarget = await legacyPipeline(gw, gw.appA.key);
    resumeTarget = await waitingStage(gw, gw.appA.key);
  });

  const bodies = [
    { what: 'invalid JSON', raw: '{"name": "x",' },
    { what: 'invalid JSON (single quotes)', raw: "{'name': 'x'}" },
    { what: 'a JSON array', raw: '[{"name":"x"}]' },
    { what: 'a JSON string', raw: '"name"' },
    { what: 'a JSON number', raw: '42' },
    { what: 'JSON null', raw: 'null' },
    { what: 'JSON true', raw: 'true' },
    { what: 'an empty body', raw: '' },
    { what: 'bytes that are not UTF-8 JSON', raw: Buffer.from([0xff, 0xfe, 0x00, 0x7b]) },
  ];

  for (const { route, path, key } of routes) {
    it.each(bodies)(
      `${route}: $what is a 400 validation_failed for the whole body ("")`,
      async ({ raw }) => {
        const reply = await gw.call('POST', path(), {
          raw,
          key: key(),
          headers: { 'content-type': 'application/json' },
        });
        expectProblem(reply, 400, 'validation_failed', ['']);
        expect(reply.body.instance).toBe(path());
      },
    );
  }

  it('POST /pipelines/{id}/cancel takes no body: an empty body is fine, a malformed one is a 400, never a 500', async () => {
    const id = await legacyPipeline(gw, gw.appA.key);
    expectProblem(
      await gw.call('POST', `/pipelines/${id}/cancel`, { raw: '{oops' }),
      400,
      'validation_failed',
      [''],
    );
    expect((await gw.call('POST', `/pipelines/${id}/cancel`, { raw: '' })).status).toBe(200);
  });
});

describe('wrong types for every top-level field', () => {
  it('POST /pipelines/idempotent reports every wrongly typed member at its pointer', async () => {
    const reply = await gw.call('POST', '/pipelines/idempotent', {
      json: {
        idempotencyKey: 5,
        name: 1,
        traceId: 2,
        policies: {},
        stages: {},
        pipelineKeywords: 'k',
        pipelineContextItems: 5,
      },
    });
    expectProblem(reply, 400, 'validation_failed', [
      '/idempotencyKey',
      '/name',
      '/traceId',
      '/policies',
      '/stages',
      '/pipelineKeywords',
      '/pipelineContextItems',
    ]);
  });

  it('POST /pipelines (legacy) reports every wrongly typed member of the definition once the key is accepted', async () => {
    const reply = await gw.call('POST', '/pipelines', {
      key: null,
      json: {
        apiKey: gw.appA.key,
        name: false,
        traceId: [],
        policies: [1],
        stages: 'none',
        pipelineKeywords: {},
        pipelineContextItems: [3],
      },
    });
    expectProblem(reply, 400, 'validation_failed', [
      '/name',
      '/traceId',
      '/policies/0',
      '/stages',
      '/pipelineKeywords',
      '/pipelineContextItems/0',
    ]);
  });

  it.each([
    { field: 'stageName', value: 1 },
    { field: 'stageHandlerName', value: ['h'] },
    { field: 'description', value: 5 },
    { field: 'input', value: { a: 1 } }, // StageCreate input is a JSON-serialized string
    { field: 'policies', value: 'p' },
    { field: 'options', value: [] },
    { field: 'isEvent', value: 'true' },
    { field: 'runNextIfFailed', value: 1 },
  ])(
    'a StageCreate $field of the wrong type is a 400 at /stages/1/$field',
    async ({ field, value }) => {
      const reply = await gw.call('POST', '/pipelines/idempotent', {
        json: {
          idempotencyKey: randomUUID(),
          ...definition({ stages: [stage(), stage({ [field]: value })] }),
        },
      });
      expectProblem(reply, 400, 'validation_failed', [`/stages/1/${field}`]);
    },
  );

  it.each([
    { field: 'runNextIfFailed', value: 'yes' },
    { field: 'retryInterval', value: -1 },
    { field: 'retryInterval', value: 1.5 },
    { field: 'maxRetries', value: '3' },
    { field: 'timeOut', value: 0 },
    { field: 'retryOnErrorCodes', value: [''] },
    { field: 'backoff', value: 'Fixed' },
    { field: 'maxRetryInterval', value: 0 },
    { field: 'jitter', value: 'no' },
    { field: 'dependsOn', value: 's' },
    { field: 'runInParallelWith', value: [1] },
    { field: 'failIfOutputEmpty', value: 1 },
    { field: 'notifyOnFailure', value: {} },
    { field: 'runAsUser', value: 5 },
  ])(
    'a StageOptions $field of $value is a 400 below /stages/0/options/$field',
    async ({ field, value }) => {
      const reply = await gw.call('POST', '/pipelines/idempotent', {
        json: {
          idempotencyKey: randomUUID(),
          ...definition({ stages: [stage({ options: { [field]: value } })] }),
        },
      });
      expect(reply.status, reply.text).toBe(400);
      const fields = (reply.body.errors as FieldError[]).map((e) => e.field);
      expect(fields.length).toBeGreaterThan(0);
      for (const f of fields) expect(f.startsWith(`/stages/0/options/${field}`), f).toBe(true);
    },
  );

  it('context items and keywords of the wrong types are 400s at their members', async () => {
    const reply = await gw.call('POST', '/pipelines/idempotent', {
      json: {
        idempotencyKey: randomUUID(),
        ...definition({
          pipelineContextItems: [
            { key: 1, value: 2, valueType: 3, isSensitive: 'yes', isDeleted: 0 },
          ],
          pipelineKeywords: [{ key: 1, value: null }, { value: 'v' }],
        }),
      },
    });
    expectProblem(reply, 400, 'validation_failed', [
      '/pipelineContextItems/0/key',
      '/pipelineContextItems/0/value',
      '/pipelineContextItems/0/valueType',
      '/pipelineContextItems/0/isSensitive',
      '/pipelineContextItems/0/isDeleted',
      '/pipelineKeywords/0/key',
      '/pipelineKeywords/0/value',
      '/pipelineKeywords/1/key',
    ]);
  });

  it('POST /pipelines/by-idempotency-key: a non-string idempotencyKey is a 400 at /idempotencyKey', async () => {
    for (const idempotencyKey of [5, true, {}, null]) {
      expectProblem(
        await gw.call('POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey } }),
        400,
        'validation_failed',
        ['/idempotencyKey'],
      );
    }
  });

  it('POST /pipelines/{id}/stages: wrongly typed members are 400s at their pointers', async () => {
    const id = await legacyPipeline(gw, gw.appA.key);
    expectProblem(
      await gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: 'x' } }),
      400,
      'validation_failed',
      ['/stages'],
    );
    expectProblem(
      await gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: [5, stage()] } }),
      400,
      'validation_failed',
      ['/stages/0'],
    );
    const reply = await gw.call('POST', `/pipelines/${id}/stages`, {
      json: {
        stages: [
          stage({
            stageId: '1',
            pipelineId: 1.5,
            runNextIfCurrentFailed: 'true',
            isEvent: 0,
            options: 'o',
          }),
        ],
      },
    });
    expectProblem(reply, 400, 'validation_failed', [
      '/stages/0/stageId',
      '/stages/0/pipelineId',
      '/stages/0/runNextIfCurrentFailed',
      '/stages/0/isEvent',
      '/stages/0/options',
    ]);
    expect(await gw.db.stage.count({ where: { pipelineId: BigInt(id) } })).toBe(1);
  });

  it('POST /stages/{id}/resume: wrongly typed members are 400s at their pointers', async () => {
    const stageId = await waitingStage(gw, gw.appA.key);
    expectProblem(
      await gw.call('POST', `/stages/${stageId}/resume`, {
        json: { approved: 'false', rejectionReason: ['r'] },
      }),
      400,
      'validation_failed',
      ['/approved', '/rejectionReason'],
    );
  });
});

describe('path parameters', () => {
  it.each([
    '0',
    '01',
    '-1',
    'abc',
    '1.0',
    '1e3',
    '0x10',
    '+1',
    '%201',
    '1%20',
    '%EF%BC%91',
    '9007199254740992',
    '%ZZ',
  ])(
    '%s as pipelineId (GET, cancel, append) or stageId (resume) is a 400 at that parameter',
    async (id) => {
      expectProblem(await gw.call('GET', `/pipelines/${id}`), 400, 'validation_failed', [
        'pipelineId',
      ]);
      expectProblem(await gw.call('POST', `/pipelines/${id}/cancel`), 400, 'validation_failed', [
        'pipelineId',
      ]);
      expectProblem(
        await gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: [stage()] } }),
        400,
        'validation_failed',
        ['pipelineId'],
      );
      expectProblem(
        await gw.call('POST', `/stages/${id}/resume`, { json: { approved: true } }),
        400,
        'validation_failed',
        ['stageId'],
      );
    },
  );
});

describe('unknown routes', () => {
  it.each([
    ['GET', '/nope'],
    ['GET', '/pipelines/1/rerun'],
    ['PUT', '/pipelines/1'],
    ['DELETE', '/pipelines/1'],
    ['POST', '/pipelines/1/unknown'],
    ['GET', '/pipelines/1/cancel'],
    ['GET', '/stages/1/resume'],
    ['POST', '/version'],
    ['GET', '/logs'],
  ])('%s %s is a 404 not_found problem whose instance is the path', async (method, path) => {
    for (const key of [gw.appA.key, null]) {
      const reply = await gw.call(method, `${path}?q=1`, { key });
      expectProblem(reply, 404, 'not_found');
      expect(reply.body.instance).toBe(path);
    }
  });

  it('the problem traceId is the trace-id of an incoming traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const reply = await gw.call('GET', '/pipelines/abc', {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expectProblem(reply, 400, 'validation_failed', ['pipelineId']);
    expect(reply.body.traceId).toBe(traceId);
    const generated = await gw.call('GET', '/pipelines/abc');
    expect(generated.body.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('Content-Type', () => {
  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/octet-stream',
    undefined,
  ])('a JSON body sent as %s is still parsed as JSON', async (contentType) => {
    const raw = JSON.stringify({
      idempotencyKey: randomUUID(),
      ...definition({ name: `as ${contentType ?? 'nothing'}` }),
    });
    const reply = await gw.call('POST', '/pipelines/idempotent', {
      raw,
      ...(contentType ? { headers: { 'content-type': contentType } } : {}),
    });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.pipeline.name).toBe(`as ${contentType ?? 'nothing'}`);
  });

  it('a text/plain legacy creation and log line are parsed as JSON too', async () => {
    const legacy = await gw.call('POST', '/pipelines', {
      key: null,
      raw: JSON.stringify({ apiKey: gw.appA.key, ...definition() }),
      headers: { 'content-type': 'text/plain' },
    });
    expect(legacy.status, legacy.text).toBe(200);
    const log = await gw.call('POST', '/logs', {
      key: null,
      raw: JSON.stringify({ message: 'plain' }),
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    });
    expect(log.status, log.text).toBe(200);
  });
});

describe('values PostgreSQL cannot store and absurd nesting are client errors, not 500s', () => {
  it('a U+0000 character in a string member is a 400 validation_failed at that member', async () => {
    const id = await legacyPipeline(gw, gw.appA.key);
    const stageId = await waitingStage(gw, gw.appA.key);
    const nul = 'a\u0000b';
    const cases: { request: () => Promise<Reply>; field: string }[] = [
      {
        request: () =>
          gw.call('POST', '/pipelines', {
            key: null,
            json: { apiKey: gw.appA.key, ...definition({ name: nul }) },
          }),
        field: '/name',
      },
      {
        request: () =>
          gw.call('POST', '/pipelines/idempotent', {
            json: { idempotencyKey: nul, ...definition() },
          }),
        field: '/idempotencyKey',
      },
      {
        request: () =>
          gw.call('POST', '/pipelines/idempotent', {
            json: {
              idempotencyKey: randomUUID(),
              ...definition({ stages: [stage({ input: nul })] }),
            },
          }),
        field: '/stages/0/input',
      },
      {
        request: () =>
          gw.call('POST', '/pipelines/idempotent', {
            json: { idempotencyKey: randomUUID(), ...definition({ policies: [{ p: nul }] }) },
          }),
        field: '/policies/0/p',
      },
      {
        request: () =>
          gw.call('POST', '/pipelines/by-idempotency-key', { json: { idempotencyKey: nul } }),
        field: '/idempotencyKey',
      },
      {
        request: () =>
          gw.call('POST', `/pipelines/${id}/stages`, {
            json: { stages: [stage({ description: nul })] },
          }),
        field: '/stages/0/description',
      },
      {
        request: () =>
          gw.call('POST', `/stages/${stageId}/resume`, {
            json: { approved: false, rejectionReason: nul },
          }),
        field: '/rejectionReason',
      },
      {
        request: () => gw.call('POST', '/logs', { key: null, json: { message: nul } }),
        field: '/message',
      },
    ];
    const outcomes = [];
    for (const c of cases) {
      const reply = await c.request();
      outcomes.push({
        field: c.field,
        status: reply.status,
        code: reply.body?.code,
        fields: (reply.body?.errors ?? []).map((e: FieldError) => e.field),
      });
    }
    expect(outcomes).toEqual(
      cases.map((c) => ({
        field: c.field,
        status: 400,
        code: 'validation_failed',
        fields: [c.field],
      })),
    );
  });

  it('JSON nested 5000 levels deep in a free-form member is a 400, not a 500', async () => {
    const id = await legacyPipeline(gw, gw.appA.key);
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const requests = {
      'legacy policies': () =>
        gw.call('POST', '/pipelines', {
          key: null,
          raw: `{"apiKey":"${gw.appA.key}","name":"n","stages":[{"stageName":"s","stageHandlerName":"h"}],"policies":[{"a":${deep}}]}`,
        }),
      'idempotent policies': () =>
        gw.call('POST', '/pipelines/idempotent', {
          raw: `{"idempotencyKey":"${randomUUID()}","name":"n","stages":[{"stageName":"s","stageHandlerName":"h"}],"policies":[{"a":${deep}}]}`,
        }),
      'append input': () =>
        gw.call('POST', `/pipelines/${id}/stages`, {
          raw: `{"stages":[{"stageName":"s","stageHandlerName":"h","input":${deep}}]}`,
        }),
      'append stage policies': () =>
        gw.call('POST', `/pipelines/${id}/stages`, {
          raw: `{"stages":[{"stageName":"s","stageHandlerName":"h","policies":[{"a":${deep}}]}]}`,
        }),
    };
    const statuses: Record<string, number> = {};
    for (const [what, send] of Object.entries(requests)) statuses[what] = (await send()).status;
    expect(statuses).toEqual(Object.fromEntries(Object.keys(requests).map((k) => [k, 400])));
  });

  it('a "__proto__" member is a 400 at its object (decision 0080): it cannot change validation, and free-form members holding one could not be stored', async () => {
    const raw = `{"apiKey":"${gw.appA.key}","__proto__":{"name":""},"name":"proto","stages":[{"stageName":"s","stageHandlerName":"h","options":{"__proto__":{"dependsOn":["missing"]}}}]}`;
    const reply = await gw.call('POST', '/pipelines', { key: null, raw });
    expect(reply.status, reply.text).toBe(400);
    expect(reply.body.code).toBe('validation_failed');
    expect(reply.body.errors.map((e: { field: string }) => e.field)).toEqual(['']);
    const policies = `{"apiKey":"${gw.appA.key}","name":"proto","policies":[{"__proto__":null}],"stages":[{"stageName":"s","stageHandlerName":"h"}]}`;
    const nested = await gw.call('POST', '/pipelines', { key: null, raw: policies });
    expect(nested.status, nested.text).toBe(400);
    expect(nested.body.errors.map((e: { field: string }) => e.field)).toEqual(['/policies/0']);
  });
});

describe(`bodies over API_MAX_BODY_BYTES (${LIMIT} in this gateway)`, () => {
  /** A valid idempotent creation body of exactly `size` bytes. */
  function bodyOf(size: number): string {
    const without = JSON.stringify({
      idempotencyKey: randomUUID(),
      ...definition({ policies: [{ pad: '' }] }),
    });
    const parsed = JSON.parse(without) as { policies: { pad: string }[] };
    parsed.policies[0]!.pad = 'x'.repeat(size - Buffer.byteLength(without));
    const text = JSON.stringify(parsed);
    expect(Buffer.byteLength(text)).toBe(size);
    return text;
  }

  it('a body of exactly the limit is accepted; one byte more is a 413 payload_too_large', async () => {
    expect(
      (
        await small.call('POST', '/pipelines/idempotent', {
          raw: bodyOf(LIMIT),
          key: small.appA.key,
        })
      ).status,
    ).toBe(201);
    expectProblem(
      await small.call('POST', '/pipelines/idempotent', {
        raw: bodyOf(LIMIT + 1),
        key: small.appA.key,
      }),
      413,
      'payload_too_large',
    );
  });

  it('a streamed (chunked) body over the limit is a 413 payload_too_large, and the gateway keeps serving', async () => {
    const body = bodyOf(LIMIT * 4);
    const chunks = body.match(/[\s\S]{1,1000}/g) ?? [];
    const reply = await streamed(small, 'POST', '/pipelines/idempotent', chunks, {
      'x-api-key': small.appA.key,
      'content-type': 'application/json',
    });
    expect(reply.headers.get('content-length')).not.toBeNull();
    expectProblem(reply, 413, 'payload_too_large');
    // A streamed body within the limit works.
    const fits = await streamed(
      small,
      'POST',
      '/pipelines/idempotent',
      [bodyOf(LIMIT).slice(0, 100), bodyOf(LIMIT).slice(100)],
      {
        'x-api-key': small.appA.key,
        'content-type': 'application/json',
      },
    );
    expect(fits.status, fits.text).toBe(201);
  });

  it('every body-taking route answers 413 with a Content-Length body and a streamed body', async () => {
    const pipelineId = await legacyPipeline(small, small.appA.key);
    const stageId = await waitingStage(small, small.appA.key);
    const huge = JSON.stringify({
      message: 'x'.repeat(LIMIT),
      apiKey: small.appA.key,
      stages: [],
      approved: true,
      idempotencyKey: 'k',
      name: 'n',
    });
    const routes = [
      '/pipelines',
      '/pipelines/idempotent',
      '/pipelines/by-idempotency-key',
      `/pipelines/${pipelineId}/cancel`,
      `/pipelines/${pipelineId}/stages`,
      `/stages/${stageId}/resume`,
      '/logs',
    ];
    for (const path of routes) {
      expectProblem(
        await small.call('POST', path, { raw: huge, key: small.appA.key }),
        413,
        'payload_too_large',
      );
      const chunked = await streamed(small, 'POST', path, [huge.slice(0, 2000), huge.slice(2000)], {
        'x-api-key': small.appA.key,
      });
      expectProblem(chunked, 413, 'payload_too_large');
    }
    // Nothing happened: the pipeline is not cancelled, nothing was appended, the stage still waits.
    const read = (await small.call('GET', `/pipelines/${pipelineId}`, { key: small.appA.key }))
      .body;
    expect(read.status).toBe('NotStarted');
    expect(read.stages).toHaveLength(1);
    expect(
      (await small.db.stage.findUniqueOrThrow({ where: { id: BigInt(stageId) } })).status,
    ).toBe('WaitingForApproval');
  });
});

describe('check order (addendum §3): route → 401 → path parameters → 413 → body validation → 404/403 → 409', () => {
  const huge = 'x'.repeat(LIMIT * 2);

  it('an unknown route is a 404 before credentials or size are looked at', async () => {
    expectProblem(
      await small.call('POST', '/pipelines/1/nothing', { raw: huge, key: null }),
      404,
      'not_found',
    );
  });

  it('an oversized body without a key, or with an unknown, disabled or expired key, is a 401', async () => {
    for (const path of [
      '/pipelines/idempotent',
      '/pipelines/by-idempotency-key',
      '/pipelines/1/cancel',
      '/pipelines/1/stages',
      '/stages/1/resume',
    ]) {
      expectProblem(await small.call('POST', path, { raw: huge, key: null }), 401, 'unauthorized');
      expectProblem(
        await small.call('POST', path, { raw: huge, key: 'pos_unknown' }),
        401,
        'unauthorized',
      );
      const streamedReply = await streamed(
        small,
        'POST',
        path,
        [huge.slice(0, 4000), huge.slice(4000)],
        {},
      );
      expectProblem(streamedReply, 401, 'unauthorized');
    }
  });

  it('no key with an invalid path parameter is a 401; a valid key with an invalid parameter and an oversized body is a 400 at the parameter', async () => {
    expectProblem(await small.call('GET', '/pipelines/abc', { key: null }), 401, 'unauthorized');
    expectProblem(
      await small.call('POST', '/stages/0/resume', { raw: huge, key: null }),
      401,
      'unauthorized',
    );
    expectProblem(
      await small.call('POST', '/pipelines/0/stages', { raw: huge }),
      400,
      'validation_failed',
      ['pipelineId'],
    );
    expectProblem(
      await small.call('POST', '/stages/abc/resume', { raw: huge }),
      400,
      'validation_failed',
      ['stageId'],
    );
  });

  it('a path parameter error is reported alone, before the body is validated', async () => {
    expectProblem(
      await gw.call('POST', '/pipelines/01/stages', { json: { stages: 'bad' } }),
      400,
      'validation_failed',
      ['pipelineId'],
    );
  });

  it('an oversized body for an unknown pipeline is a 413, not a 404', async () => {
    expectProblem(
      await small.call('POST', '/pipelines/9007199254740991/stages', { raw: huge }),
      413,
      'payload_too_large',
    );
  });

  it("an invalid body for an unknown or another application's pipeline is a 400, not a 404", async () => {
    const other = await legacyPipeline(gw, gw.appB.key);
    for (const id of [other, 9007199254740991]) {
      expectProblem(
        await gw.call('POST', `/pipelines/${id}/stages`, { json: { stages: [] } }),
        400,
        'validation_failed',
        ['/stages'],
      );
    }
    expectProblem(
      await gw.call('POST', '/stages/9007199254740991/resume', { json: {} }),
      400,
      'validation_failed',
      ['/approved'],
    );
  });

  it("another application's terminal pipeline is a 404, not a 409", async () => {
    const other = await legacyPipeline(gw, gw.appB.key);
    expect((await gw.call('POST', `/pipelines/${other}/cancel`, { key: gw.appB.key })).status).toBe(
      200,
    );
    expectProblem(await gw.call('POST', `/pipelines/${other}/cancel`), 404, 'not_found');
    expectProblem(
      await gw.call('POST', `/pipelines/${other}/stages`, { json: { stages: [stage()] } }),
      404,
      'not_found',
    );
  });

  it('legacy creation reads its key from the body, so an oversized body is a 413 and malformed JSON a 400 whatever the key', async () => {
    expectProblem(
      await small.call('POST', '/pipelines', {
        raw: JSON.stringify({ apiKey: 'pos_unknown', name: huge }),
        key: null,
      }),
      413,
      'payload_too_large',
    );
    expectProblem(
      await small.call('POST', '/pipelines', { raw: '{"apiKey": "pos_unknown", ', key: null }),
      400,
      'validation_failed',
      [''],
    );
  });
});
