// The OpenAPI 3.1 document (decision 0041): its structure, its schemas against the JSON Schema
// 2020-12 meta-schema and against the validators they come from, and the committed copy
// docs/openapi.json, which must match what the schemas generate.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  buildOpenApiDocument,
  compile,
  isRfc3339DateTime,
  JSON_SCHEMA_DIALECT,
  legacyPipelineCreateRequestSchema,
  problemDetailsSchema,
  registeredSchemas,
  scheduleUpsertRequestSchema,
  stageResultSubmitSchema,
  toOpenApiSchema,
  workerEventPageSchema,
  workerEventsRequestSchema,
  workerPageSchema,
} from './index.js';
import type {
  JsonSchema,
  OpenApiDocument,
  OpenApiOperation,
  OpenApiReference,
  OpenApiResponse,
} from './index.js';
import { definition, stage } from './validation.test-support.js';

const committedPath = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));
const REGENERATE =
  'docs/openapi.json does not match the schemas of @po/contracts. Regenerate it with ' +
  '`npx tsc --build libs/contracts && node libs/contracts/scripts/openapi.mjs` ' +
  '(or `npm run build` first), review the diff, and commit it.';

const doc = buildOpenApiDocument();
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

function operations(d: OpenApiDocument = doc): [string, string, OpenApiOperation][] {
  const out: [string, string, OpenApiOperation][] = [];
  for (const [path, item] of Object.entries(d.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) out.push([method, path, op]);
    }
  }
  return out;
}

/** Every value found under `key` anywhere in the document, with its JSON Pointer. */
function collect(value: unknown, key: string, pointer = ''): [string, unknown][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => collect(v, key, `${pointer}/${i}`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const here = `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    return [...(k === key ? [[here, v] as [string, unknown]] : []), ...collect(v, key, here)];
  });
}

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let current: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, token)) {
      return undefined;
    }
    current = (current as Record<string, unknown>)[token];
  }
  return current;
}

function isReference(value: unknown): value is OpenApiReference {
  return typeof value === 'object' && value !== null && '$ref' in value;
}

function deref<T>(value: T | OpenApiReference): T {
  return (isReference(value) ? resolvePointer(doc, value.$ref) : value) as T;
}

describe('the committed document (CI check)', () => {
  it('docs/openapi.json equals buildOpenApiDocument()', () => {
    let committed: unknown;
    try {
      committed = JSON.parse(readFileSync(committedPath, 'utf8'));
    } catch (err) {
      throw new Error(`${REGENERATE}\n(${String(err)})`, { cause: err });
    }
    expect(committed, REGENERATE).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('is deterministic and plain JSON', () => {
    expect(JSON.stringify(buildOpenApiDocument())).toBe(JSON.stringify(doc));
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });
});

describe('document structure (OpenAPI 3.1)', () => {
  it('is OpenAPI 3.1.0 in the JSON Schema 2020-12 dialect, versioned like the API', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.jsonSchemaDialect).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(JSON_SCHEMA_DIALECT).toBe(doc.jsonSchemaDialect);
    expect(doc.info.version).toBe('0.5.0');
    expect(doc.info.title).not.toBe('');
  });

  it('every $ref resolves inside the document', () => {
    const refs = collect(doc, '$ref');
    expect(refs.length).toBeGreaterThan(100);
    const broken = refs.filter(
      ([, ref]) => typeof ref !== 'string' || resolvePointer(doc, ref) === undefined,
    );
    expect(broken).toEqual([]);
  });

  it('keeps no schema $id, urn reference or ajv-only keyword', () => {
    expect(collect(doc, '$id')).toEqual([]);
    expect(JSON.stringify(doc)).not.toContain('urn:pipeline-orchestration:schema:');
    expect(collect(doc, 'maxBytes')).toEqual([]);
    expect(collect(doc, 'noControlCharacters')).toEqual([]);
  });

  it('every operation has a unique operationId, a declared tag, a service and responses with a 2xx', () => {
    const ids = new Set<string>();
    const tags = new Set(doc.tags.map((t) => t.name));
    for (const [method, path, op] of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(ids.has(op.operationId), where).toBe(false);
      ids.add(op.operationId);
      expect(
        op.tags.every((t) => tags.has(t)),
        where,
      ).toBe(true);
      expect(['api-gateway', 'worker-gateway'], where).toContain(op['x-service']);
      const statuses = Object.keys(op.responses);
      expect(
        statuses.some((s) => /^2\d\d$/.test(s)),
        where,
      ).toBe(true);
      for (const status of statuses) expect(status, where).toMatch(/^[1-5]\d\d$/);
      expect(op.summary, where).not.toBe('');
    }
  });

  it('errors are problem+json ProblemDetails; JSON successes are application/json', () => {
    for (const [method, path, op] of operations()) {
      for (const [status, value] of Object.entries(op.responses)) {
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const response = deref<OpenApiResponse>(value);
        expect(response.description, where).toBeTruthy();
        if (Number(status) >= 400 && !(path === '/readyz' && status === '503')) {
          expect(isReference(value), where).toBe(true);
          expect(Object.keys(response.content ?? {}), where).toEqual(['application/problem+json']);
          expect(response.content?.['application/problem+json']?.schema, where).toEqual({
            $ref: '#/components/schemas/ProblemDetails',
          });
        } else if (response.content) {
          expect(Object.keys(response.content), where).toEqual(['application/json']);
        }
      }
    }
  });

  it('every path template variable is a required path parameter, and nothing more', () => {
    for (const [method, path, op] of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const params = (op.parameters ?? []).map((p) =>
        deref<{ name: string; in: string; required: boolean }>(p),
      );
      const pathParams = params.filter((p) => p.in === 'path');
      expect(pathParams.map((p) => p.name).sort(), where).toEqual([...inPath].sort());
      expect(
        pathParams.every((p) => p.required),
        where,
      ).toBe(true);
      expect(new Set(params.map((p) => `${p.in}:${p.name}`)).size, where).toBe(params.length);
    }
  });

  it('security requirements name declared schemes only', () => {
    const schemes = new Set(Object.keys(doc.components.securitySchemes));
    for (const [method, path, op] of operations()) {
      for (const requirement of op.security) {
        for (const name of Object.keys(requirement)) {
          expect(schemes.has(name), `${method} ${path}: ${name}`).toBe(true);
        }
      }
    }
    expect(doc.components.securitySchemes).toMatchObject({
      ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      WorkerSession: { type: 'apiKey', in: 'header', name: 'X-Worker-Session' },
    });
  });

  it('operations with a body declare an application/json request body and a 413', () => {
    for (const [method, path, op] of operations()) {
      if (!op.requestBody) continue;
      const where = `${method.toUpperCase()} ${path}`;
      expect(Object.keys(op.requestBody.content), where).toEqual(['application/json']);
      expect(op.responses['413'], where).toBeDefined();
    }
  });
});

describe('coverage of the API', () => {
  // api-spec.md "Endpoints", plus worker activity (issue item 5), stage log pages (decision 0084),
  // schedule backfill (issue 11, decision 0087), the dashboard's reads (issue 13, decision 0093)
  // and this document.
  const expected = [
    'POST /pipelines',
    'GET /pipelines',
    'POST /pipelines/idempotent',
    'POST /pipelines/by-idempotency-key',
    'GET /pipelines/{pipelineId}',
    'GET /pipelines/{pipelineId}/stages/{stageId}/logs',
    'POST /pipelines/{pipelineId}/cancel',
    'POST /pipelines/{pipelineId}/rerun',
    'POST /pipelines/{pipelineId}/stages',
    'POST /stages/{stageId}/resume',
    'GET /schedules',
    'PUT /schedules/{name}',
    'GET /schedules/{name}',
    'GET /schedules/{name}/runs',
    'POST /schedules/{name}/pause',
    'POST /schedules/{name}/resume',
    'POST /schedules/{name}/archive',
    'POST /schedules/{name}/trigger',
    'POST /schedules/{name}/backfill',
    'GET /handlers',
    'GET /handlers/{name}',
    'PUT /handlers/{name}',
    'POST /pipelines/bulk-rerun',
    'POST /pipelines/bulk-cancel',
    'GET /operations/{id}',
    'POST /operations/{id}/cancel',
    'GET /webhooks',
    'GET /webhooks/{name}',
    'PUT /webhooks/{name}',
    'DELETE /webhooks/{name}',
    'GET /webhooks/{name}/deliveries',
    'POST /webhooks/{name}/deliveries/{id}/retry',
    'POST /workers/bootstrap',
    'POST /workers/heartbeat',
    'POST /workers/events',
    'POST /workers/shutdown',
    'POST /jobs/pull',
    'POST /jobs/ack',
    'POST /stages/{stageId}/lease/acquire',
    'POST /stages/{stageId}/lease/renew',
    'POST /stages/{stageId}/result',
    'GET /version',
    'POST /logs',
    'GET /workers',
    'GET /workers/{workerId}/events',
    'GET /overview',
    'GET /worker-events',
    'GET /openapi.json',
    'GET /healthz',
    'GET /readyz',
  ];

  it('documents every endpoint of both gateways, and only those', () => {
    const documented = operations().map(([m, p]) => `${m.toUpperCase()} ${p}`);
    expect(documented.sort()).toEqual([...expected].sort());
  });

  it('worker protocol operations are the worker-gateway; the rest the api-gateway', () => {
    const worker = new Set([
      '/workers/bootstrap',
      '/workers/heartbeat',
      '/workers/events',
      '/workers/shutdown',
      '/jobs/pull',
      '/jobs/ack',
      '/stages/{stageId}/lease/acquire',
      '/stages/{stageId}/lease/renew',
      '/stages/{stageId}/result',
    ]);
    for (const [, path, op] of operations()) {
      expect(op['x-service'], path).toBe(worker.has(path) ? 'worker-gateway' : 'api-gateway');
    }
  });

  it('components.schemas holds every registered schema under its name', () => {
    const names = registeredSchemas().map((s) => String(s.title));
    expect(Object.keys(doc.components.schemas).sort()).toEqual([...names].sort());
    for (const name of [
      'ProblemDetails',
      'WorkerPage',
      'WorkerEventPage',
      'WorkerSummary',
      'StageNextMessage',
    ]) {
      expect(doc.components.schemas[name]?.title).toBe(name);
    }
  });
});

describe('credentials and statuses per api-spec (spot checks)', () => {
  const op = (method: 'get' | 'put' | 'post', path: string): OpenApiOperation => {
    const found = doc.paths[path]?.[method];
    if (!found) throw new Error(`missing ${method} ${path}`);
    return found;
  };
  const statuses = (o: OpenApiOperation) => Object.keys(o.responses).sort();

  it('legacy creation has no header credential; its key is the body apiKey', () => {
    const legacy = op('post', '/pipelines');
    expect(legacy.security).toEqual([]);
    expect(statuses(legacy)).toEqual(['200', '400', '401', '413', '500']);
    const body = doc.components.schemas.LegacyPipelineCreateRequest;
    expect(body?.required).toContain('apiKey');
    expect(body?.properties).toMatchObject({ apiKey: { writeOnly: true, deprecated: true } });
  });

  it('idempotent creation: X-API-Key, 201 and 200 of the same type, 409', () => {
    const create = op('post', '/pipelines/idempotent');
    expect(create.security).toEqual([{ ApiKey: [] }]);
    expect(statuses(create)).toEqual(['200', '201', '400', '401', '409', '413', '500']);
    const body = (status: string) => deref<OpenApiResponse>(create.responses[status]!).content;
    expect(body('201')).toEqual(body('200'));
  });

  it('a result needs both X-API-Key and X-Worker-Session (one requirement), and has its own 413', () => {
    const result = op('post', '/stages/{stageId}/result');
    expect(result.security).toEqual([{ ApiKey: [], WorkerSession: [] }]);
    expect(statuses(result)).toEqual(['202', '400', '401', '403', '404', '413', '500', '503']);
    expect((result.responses['413'] as OpenApiReference).description).toContain('327680');
  });

  it('ack has no header credential; heartbeat, events, shutdown and leases use the session', () => {
    expect(op('post', '/jobs/ack').security).toEqual([]);
    for (const path of [
      '/workers/heartbeat',
      '/workers/events',
      '/workers/shutdown',
      '/stages/{stageId}/lease/acquire',
      '/stages/{stageId}/lease/renew',
    ]) {
      expect(op('post', path).security, path).toEqual([{ WorkerSession: [] }]);
    }
    for (const path of [
      '/workers/heartbeat',
      '/workers/events',
      '/workers/shutdown',
      '/jobs/ack',
    ]) {
      const ok = deref<OpenApiResponse>(op('post', path).responses['200']!);
      expect(ok.content, path).toBeUndefined();
    }
  });

  it('pull: 200 or 204, 403 foreign queue, 429 with Retry-After, 503 while Redis does not answer', () => {
    const pull = op('post', '/jobs/pull');
    expect(statuses(pull)).toEqual(['200', '204', '400', '401', '403', '413', '429', '500', '503']);
    const tooMany = deref<OpenApiResponse>(pull.responses['429']!);
    expect(tooMany.headers?.['Retry-After']).toEqual({ $ref: '#/components/headers/RetryAfter' });
  });

  it('ack: 503 when Redis did not confirm it', () => {
    expect(statuses(op('post', '/jobs/ack'))).toEqual(['200', '400', '404', '413', '500', '503']);
  });

  it('system endpoints and this document need no credential', () => {
    for (const [method, path] of [
      ['get', '/version'],
      ['post', '/logs'],
      ['get', '/openapi.json'],
      ['get', '/healthz'],
      ['get', '/readyz'],
    ] as const) {
      expect(op(method, path).security, path).toEqual([]);
    }
    expect(op('post', '/logs').responses['401']).toBeUndefined();
  });

  it('handlers (decision 0132): X-API-Key, an unpaged list, 404 for an unknown handler, PUT upserts with a small body', () => {
    const list = op('get', '/handlers');
    expect(list.security).toEqual([{ ApiKey: [] }]);
    expect(statuses(list)).toEqual(['200', '401', '500']);
    expect(statuses(op('get', '/handlers/{name}'))).toEqual(['200', '400', '401', '404', '500']);
    const put = op('put', '/handlers/{name}');
    expect(put.parameters).toEqual([{ $ref: '#/components/parameters/handlerName' }]);
    expect(statuses(put)).toEqual(['200', '400', '401', '413', '500']);
    expect(doc.components.parameters.handlerName?.name).toBe('name');
  });

  it('worker activity: X-API-Key, paging parameters, 404 for a foreign worker', () => {
    const list = op('get', '/workers');
    expect(list.security).toEqual([{ ApiKey: [] }]);
    expect(list.parameters).toEqual([
      { $ref: '#/components/parameters/cursor' },
      { $ref: '#/components/parameters/limit' },
    ]);
    expect(statuses(list)).toEqual(['200', '400', '401', '500']);
    const events = op('get', '/workers/{workerId}/events');
    expect(statuses(events)).toEqual(['200', '400', '401', '404', '500']);
    expect(doc.components.parameters.limit?.schema).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 200,
      default: 50,
    });
  });

  it('pipeline search and rerun (decision 0089): repeatable filters, signed cursors, 409 while not terminal', () => {
    const list = op('get', '/pipelines');
    expect(list.security).toEqual([{ ApiKey: [] }]);
    expect(list.parameters?.map((p) => p.$ref.split('/').pop())).toEqual([
      'pipelineStatus',
      'pipelineNamePrefix',
      'keyword',
      'scheduleName',
      'createdAfter',
      'createdBefore',
      'stageHandlerName',
      'cursor',
      'limit',
    ]);
    const params = doc.components.parameters;
    expect(params.pipelineStatus).toMatchObject({ name: 'status', in: 'query' });
    expect(params.pipelineStatus?.schema).toEqual({
      type: 'array',
      items: {
        type: 'string',
        enum: ['NotStarted', 'Pending', 'Running', 'Paused', 'Completed', 'Failed', 'Cancelled'],
      },
    });
    expect(params.pipelineNamePrefix).toMatchObject({ name: 'name', in: 'query' });
    expect(params.keyword?.schema).toMatchObject({ type: 'array', maxItems: 10 });
    expect(params.createdAfter?.schema).toEqual({ type: 'string', format: 'date-time' });
    expect(statuses(list)).toEqual(['200', '400', '401', '500']);
    expect(
      deref<OpenApiResponse>(list.responses['200']!).content?.['application/json']?.schema,
    ).toEqual({
      $ref: '#/components/schemas/PipelinePage',
    });
    const rerun = op('post', '/pipelines/{pipelineId}/rerun');
    expect(statuses(rerun)).toEqual(['201', '400', '401', '404', '409', '413', '500']);
    expect(rerun.responses['409']?.description).toContain('pipeline_not_terminal');
  });

  it('schedules: status filter, cancel 504, resume 409 and 400', () => {
    expect(op('get', '/schedules').parameters?.map((p) => p.$ref.split('/').pop())).toEqual([
      'status',
      'cursor',
      'limit',
    ]);
    expect(doc.components.parameters.status?.schema).toEqual({
      type: 'string',
      enum: ['Active', 'Paused', 'Archived'],
    });
    expect(statuses(op('post', '/pipelines/{pipelineId}/cancel'))).toContain('504');
    expect(statuses(op('post', '/schedules/{name}/resume'))).toEqual([
      '200',
      '400',
      '401',
      '404',
      '409',
      '500',
    ]);
    expect(op('post', '/schedules/{name}/trigger').requestBody?.required).toBe(false);
  });
});

describe('schemas: from ajv to the document', () => {
  it('maps maxBytes to x-max-bytes and noControlCharacters to x-no-control-characters, with a description', () => {
    const schemas = doc.components.schemas;
    const prop = (schema: string, name: string) =>
      (schemas[schema]?.properties as Record<string, Record<string, unknown>>)[name];
    expect(prop('StageCreate', 'input')).toMatchObject({ type: 'string', 'x-max-bytes': 262144 });
    expect(prop('StageCreate', 'input')?.description).toContain('262144 UTF-8 bytes');
    expect(prop('StageResultSubmit', 'errorCode')).toMatchObject({
      'x-no-control-characters': true,
    });
    expect(prop('StageResultSubmit', 'errorCode')?.description).toMatch(/control characters/);
    // A description that already speaks of bytes is kept as it is.
    expect(prop('BootstrapRequest', 'metadata')).toEqual({
      type: 'object',
      'x-max-bytes': 16384,
      description: 'free-form; at most 16384 bytes as JSON',
    });
  });

  it('rewrites $id references to component references and drops $id', () => {
    expect(toOpenApiSchema(workerPageSchema)).toEqual({
      title: 'WorkerPage',
      description: 'workers of the application by createdAt, then workerId, ascending',
      type: 'object',
      required: ['items', 'nextCursor'],
      properties: {
        items: { type: 'array', items: { $ref: '#/components/schemas/WorkerSummary' } },
        nextCursor: { type: ['string', 'null'], minLength: 1 },
      },
      additionalProperties: false,
    });
    expect(() => toOpenApiSchema({ $ref: 'urn:elsewhere:Thing' })).toThrow(/not a schema id/);
  });

  it('every component schema is a valid JSON Schema 2020-12 schema', () => {
    const ajv = new Ajv2020({ strict: true });
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      const valid = ajv.validateSchema(schema);
      expect(valid ? [] : ajv.errors, name).toEqual([]);
    }
  });

  // The document's schemas, compiled by a generic 2020-12 validator, agree with the validators of
  // this package (the `x-` keywords aside, which generic validators ignore).
  const generic = new Ajv2020({ strict: true, allErrors: true });
  generic.addFormat('date-time', { type: 'string', validate: isRfc3339DateTime });
  generic.addKeyword({ keyword: 'x-max-bytes', schemaType: 'number' });
  generic.addKeyword({ keyword: 'x-no-control-characters', schemaType: 'boolean' });
  generic.addKeyword({ keyword: 'components', schemaType: 'object' });
  const base = 'https://openapi.test/document.json';
  generic.addSchema({ $id: base, components: { schemas: doc.components.schemas } });
  const fromDocument = (schema: JsonSchema) => {
    const validate = generic.getSchema(`${base}#/components/schemas/${String(schema.title)}`);
    if (!validate) throw new Error(`no component ${String(schema.title)}`);
    return (body: unknown) => validate(body) === true;
  };
  const fromContracts = (schema: JsonSchema) => {
    const validate = compile(schema, { normalise: false });
    return (body: unknown) => validate(body).ok;
  };

  const at = '2025-03-01T12:00:00.000Z';
  const worker = {
    workerId: 'w-1',
    instanceId: 'host-1',
    workerName: null,
    handlers: ['h'],
    status: 'Active',
    lastHeartbeatAt: at,
    counters: { inFlight: 1, processed: 2, failed: null },
    sessionExpiresAt: null,
    createdAt: at,
  };
  const event = {
    id: 1,
    kind: 'custom',
    at,
    message: null,
    stageId: null,
    pipelineId: 3,
    data: { a: 1 },
  };
  const cases: [string, JsonSchema, unknown, boolean][] = [
    ['a legacy creation', legacyPipelineCreateRequestSchema, { ...definition, apiKey: 'k' }, true],
    ['a legacy creation without apiKey', legacyPipelineCreateRequestSchema, definition, false],
    [
      'a legacy creation without stages',
      legacyPipelineCreateRequestSchema,
      { ...definition, apiKey: 'k', stages: [] },
      false,
    ],
    [
      'a nested wrong type',
      legacyPipelineCreateRequestSchema,
      { ...definition, apiKey: 'k', stages: [{ ...stage, options: { maxRetries: '3' } }] },
      false,
    ],
    [
      'a Cron upsert',
      scheduleUpsertRequestSchema,
      { kind: 'Cron', cronExpression: '* * * * *', definition },
      true,
    ],
    ['an unknown kind', scheduleUpsertRequestSchema, { kind: 'Weekly', definition }, false],
    [
      'a runAt without offset',
      scheduleUpsertRequestSchema,
      { kind: 'Once', runAt: '2030-01-01T00:00:00', definition },
      false,
    ],
    [
      'an events batch',
      workerEventsRequestSchema,
      { workerId: 'w', events: [{ kind: 'started', at }] },
      true,
    ],
    [
      'an unknown event kind',
      workerEventsRequestSchema,
      { workerId: 'w', events: [{ kind: 'boom' }] },
      false,
    ],
    [
      'an oversized batch',
      workerEventsRequestSchema,
      { workerId: 'w', events: Array.from({ length: 101 }, () => ({ kind: 'custom' })) },
      false,
    ],
    [
      'a result with appended stages',
      stageResultSubmitSchema,
      { stageId: 1, executionId: 'e', attempt: 1, appendedStages: [{ ...stage, input: { a: 1 } }] },
      true,
    ],
    [
      'a result with attempt 0',
      stageResultSubmitSchema,
      { stageId: 1, executionId: 'e', attempt: 0 },
      false,
    ],
    ['a worker page', workerPageSchema, { items: [worker], nextCursor: null }, true],
    [
      'a worker page with an extra member',
      workerPageSchema,
      { items: [{ ...worker, token: 'x' }], nextCursor: null },
      false,
    ],
    [
      'a worker with a stale status',
      workerPageSchema,
      { items: [{ ...worker, status: 'Gone' }], nextCursor: null },
      false,
    ],
    ['an event page', workerEventPageSchema, { items: [event], nextCursor: 'c' }, true],
    [
      'an event at without milliseconds',
      workerEventPageSchema,
      { items: [{ ...event, at: '2025-03-01T12:00:00Z' }], nextCursor: null },
      false,
    ],
    [
      'a problem',
      problemDetailsSchema,
      {
        type: 'urn:problem-type:pipeline-orchestration:not_found',
        title: 'Not found',
        status: 404,
        detail: 'd',
        instance: '/x',
        code: 'not_found',
        traceId: 't',
      },
      true,
    ],
    [
      'a problem with an unknown code',
      problemDetailsSchema,
      {
        type: 'urn:problem-type:pipeline-orchestration:nope',
        title: 'x',
        status: 404,
        detail: 'd',
        instance: '/x',
        code: 'nope',
        traceId: 't',
      },
      false,
    ],
  ];

  it.each(cases)(
    '%s: same verdict from the document and from @po/contracts',
    (_, schema, body, valid) => {
      expect(fromContracts(schema)(body)).toBe(valid);
      expect(fromDocument(schema)(body)).toBe(valid);
    },
  );

  it('byte limits are annotations for generic validators (x-max-bytes), enforced by @po/contracts', () => {
    const body = { ...definition, apiKey: 'k', stages: [{ ...stage, input: 'é'.repeat(131_073) }] };
    expect(fromContracts(legacyPipelineCreateRequestSchema)(body)).toBe(false);
    expect(fromDocument(legacyPipelineCreateRequestSchema)(body)).toBe(true);
  });
});
