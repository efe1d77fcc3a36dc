// The OpenAPI 3.1 document of the whole external API (api-gateway and worker-gateway), generated
// from the registered ajv schemas, so the document and the validators share one source of truth
// (issue item 6; decision 0041). The operations (paths, credentials, statuses) are listed here from
// api-spec.md and the addendum; every body schema comes from `registeredSchemas()`.
//
// Conversions from the ajv schemas to the document (JSON Schema 2020-12 dialect):
// - `$id` is dropped, and a `$ref` to `urn:pipeline-orchestration:schema:{Name}` becomes
//   `#/components/schemas/{Name}` (a component keeping its `$id` would rebase those refs).
// - The custom keyword `maxBytes` becomes `x-max-bytes` (same number: UTF-8 bytes of a string, or
//   of the compact JSON of another value); `noControlCharacters` becomes
//   `x-no-control-characters`. Both are also said in the description, since generic validators
//   ignore `x-` keywords.
import { MAX_ID, schemaId } from './fragments.js';
import { limits } from './limits.js';
// Every module that registers schemas, so the document is complete whatever was imported first.
import './pipelines.js';
import './pipeline-responses.js';
import './problem.js';
import { SCHEDULE_STATUSES } from './schedules.js';
import { API_VERSION } from './system.js';
import { WORKER_ID_MAX_CHARS } from './worker-activity.js';
import './workers.js';
import { registeredSchemas } from './validate.js';
import type { JsonSchema } from './validate.js';

/** A JSON value of the document (schemas and extensions). */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonMap = { [key: string]: Json };

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** Which service serves an operation (vendor extension `x-service`). */
export type ServiceName = 'api-gateway' | 'worker-gateway';

export interface OpenApiReference {
  $ref: string;
  description?: string;
}

export interface OpenApiMediaType {
  schema: JsonMap;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, OpenApiReference>;
  content?: Record<string, OpenApiMediaType>;
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  'x-service': ServiceName;
  /** `[]`: no header credential. Several schemes in one object: all of them are required. */
  security: Record<string, string[]>[];
  parameters?: OpenApiReference[];
  requestBody?: {
    required: boolean;
    description?: string;
    content: Record<string, OpenApiMediaType>;
  };
  responses: Record<string, OpenApiResponse | OpenApiReference>;
}

export type OpenApiPathItem = Partial<Record<HttpMethod, OpenApiOperation>>;

export interface OpenApiDocument {
  openapi: '3.1.0';
  jsonSchemaDialect: string;
  info: {
    title: string;
    version: string;
    description: string;
  };
  tags: { name: string; description: string }[];
  paths: Record<string, OpenApiPathItem>;
  components: {
    schemas: Record<string, JsonMap>;
    securitySchemes: Record<
      string,
      { type: 'apiKey'; in: 'header'; name: string; description: string }
    >;
    parameters: Record<
      string,
      {
        name: string;
        in: 'path' | 'query';
        required: boolean;
        description: string;
        schema: JsonMap;
      }
    >;
    headers: Record<string, { description: string; schema: JsonMap }>;
    responses: Record<string, OpenApiResponse>;
  };
}

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

const SCHEMA_ID_PREFIX = schemaId('');
const JSON_TYPE = 'application/json';
const PROBLEM_TYPE = 'application/problem+json';

// ---------------------------------------------------------------------------------------------
// Schemas

/** The component name of a registered schema `$id`. */
function componentName(id: string): string {
  if (!id.startsWith(SCHEMA_ID_PREFIX)) throw new Error(`not a schema id of this package: ${id}`);
  return id.slice(SCHEMA_ID_PREFIX.length);
}

function componentRef(name: string): string {
  return `#/components/schemas/${name}`;
}

/** Keywords whose value is a map of subschemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']);
/** Keywords whose value is one subschema. */
const SCHEMA_ONE = new Set([
  'items',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
]);
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A plain JSON copy of a value (schemas are frozen; the document must be mutable and JSON). */
function json(value: unknown): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

function withSentence(description: unknown, sentence: string): string {
  return typeof description === 'string' && description !== ''
    ? `${description}. ${sentence}`
    : sentence;
}

/** One ajv schema as a 2020-12 schema of the document (see the conversions at the top). */
export function toOpenApiSchema(schema: JsonSchema): JsonMap {
  const out: JsonMap = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$id') continue;
    if (key === '$ref' && typeof value === 'string') {
      out.$ref = componentRef(componentName(value));
    } else if (key === 'maxBytes' && typeof value === 'number') {
      out['x-max-bytes'] = value;
      const described = typeof schema.description === 'string' && /bytes/.test(schema.description);
      if (!described) notes.push(`At most ${value} UTF-8 bytes`);
    } else if (key === 'noControlCharacters' && typeof value === 'boolean') {
      out['x-no-control-characters'] = value;
      if (value) notes.push('No control characters (Unicode category Cc)');
    } else if (SCHEMA_MAPS.has(key) && isMap(value)) {
      const map: JsonMap = {};
      for (const [name, sub] of Object.entries(value))
        map[name] = toOpenApiSchema(sub as JsonSchema);
      out[key] = map;
    } else if (SCHEMA_ONE.has(key) && isMap(value)) {
      out[key] = toOpenApiSchema(value);
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key] = value.map((sub) => toOpenApiSchema(sub as JsonSchema));
    } else {
      out[key] = json(value);
    }
  }
  if (notes.length > 0) out.description = withSentence(out.description, `${notes.join('. ')}.`);
  return out;
}

/** components.schemas: every registered schema, by name, sorted (stable output). */
function componentSchemas(): Record<string, JsonMap> {
  const entries = registeredSchemas().map((schema): [string, JsonMap] => [
    componentName(String(schema.$id)),
    toOpenApiSchema(schema),
  ]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

// ---------------------------------------------------------------------------------------------
// Operations

type Security = 'none' | 'apiKey' | 'session' | 'apiKeyAndSession';
type Parameter = 'pipelineId' | 'stageId' | 'name' | 'workerId' | 'limit' | 'cursor' | 'status';

interface Success {
  description: string;
  /** A component schema name, an inline schema, or nothing for an empty body. */
  body?: string | JsonMap;
}

interface OperationSpec {
  method: HttpMethod;
  path: string;
  service: ServiceName;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  security: Security;
  parameters?: Parameter[];
  body?: { schema: string; required: boolean; description?: string };
  /** 413 limit when it is not API_MAX_BODY_BYTES. */
  bodyLimitBytes?: number;
  success: Record<string, Success>;
  /** Error status → what it means for this operation. */
  errors: Record<string, string>;
}

const SECURITY: Record<Security, Record<string, string[]>[]> = {
  none: [],
  apiKey: [{ ApiKey: [] }],
  session: [{ WorkerSession: [] }],
  apiKeyAndSession: [{ ApiKey: [], WorkerSession: [] }],
};

/** The response component of each problem status. */
const PROBLEM_RESPONSES: Record<string, { name: string; description: string }> = {
  '400': { name: 'BadRequest', description: '`validation_failed`: body, path or query validation' },
  '401': {
    name: 'Unauthorized',
    description: '`unauthorized`: missing or invalid credential',
  },
  '403': {
    name: 'Forbidden',
    description: '`forbidden`: the resource belongs to another application',
  },
  '404': { name: 'NotFound', description: '`not_found`: unknown resource or route' },
  '409': { name: 'Conflict', description: 'a conflict with the state of the resource' },
  '413': {
    name: 'PayloadTooLarge',
    description: '`payload_too_large`: the body is over API_MAX_BODY_BYTES (default 33554432)',
  },
  '429': {
    name: 'TooManyInflight',
    description:
      '`too_many_inflight`: this process holds GATEWAY_MAX_INFLIGHT deliveries; retry later',
  },
  '500': { name: 'InternalError', description: '`internal`: unexpected failure' },
  '503': {
    name: 'BrokerUnavailable',
    description: '`broker_unavailable`: the broker is unavailable',
  },
  '504': {
    name: 'CancellationTimeout',
    description: '`cancellation_timeout`: cancellation did not finish in CANCEL_TIMEOUT_SECONDS',
  },
};

const PIPELINES = 'Pipelines';
const SCHEDULES = 'Schedules';
const WORKER_PROTOCOL = 'Worker protocol';
const WORKER_ACTIVITY = 'Worker activity';
const SYSTEM = 'System';

const TAGS = [
  { name: PIPELINES, description: 'Pipelines and stages (api-gateway).' },
  { name: SCHEDULES, description: 'Named, application-scoped schedules (api-gateway).' },
  {
    name: WORKER_PROTOCOL,
    description:
      'Bootstrap, sessions, pull/ack, leases and results of HTTP workers (worker-gateway).',
  },
  {
    name: WORKER_ACTIVITY,
    description:
      'Workers of an application and the events they sent, for dashboards (api-gateway).',
  },
  { name: SYSTEM, description: 'Version, legacy logs, this document and health (api-gateway).' },
];

const empty = (description: string): Success => ({ description });

const OPERATIONS: OperationSpec[] = [
  // Pipelines ---------------------------------------------------------------------------------
  {
    method: 'post',
    path: '/pipelines',
    service: 'api-gateway',
    operationId: 'createPipelineLegacy',
    tag: PIPELINES,
    summary: 'Create a pipeline (legacy contract)',
    description:
      'Every successful call creates a new pipeline, even for identical payloads. The credential is the body `apiKey` (no header; `X-API-Key` is ignored); it is checked before the rest of the body.',
    security: 'none',
    body: { schema: 'LegacyPipelineCreateRequest', required: true },
    success: { '200': { description: 'the new pipeline', body: 'PipelineResponse' } },
    errors: {
      '400': 'invalid request; a missing or non-string `apiKey` is an error at `/apiKey`',
      '401': 'invalid API key in the body',
      '500': 'creation failed',
    },
  },
  {
    method: 'post',
    path: '/pipelines/idempotent',
    service: 'api-gateway',
    operationId: 'createPipelineIdempotent',
    tag: PIPELINES,
    summary: 'Create or resolve a pipeline by an idempotency key',
    description:
      'The key is application-scoped and kept for the pipeline lifetime. The same key with the same creation intent returns the same pipeline; `traceId` is not part of the intent.',
    security: 'apiKey',
    body: { schema: 'IdempotentPipelineCreateRequest', required: true },
    success: {
      '201': {
        description: 'a new pipeline (`created` true)',
        body: 'IdempotentPipelineCreateResponse',
      },
      '200': {
        description: 'the existing pipeline of this key (`wasExisting` true)',
        body: 'IdempotentPipelineCreateResponse',
      },
    },
    errors: {
      '400': 'validation',
      '401': 'missing or invalid X-API-Key',
      '409': '`idempotency_conflict`: the key was used for a different creation intent',
      '500': 'creation failed',
    },
  },
  {
    method: 'post',
    path: '/pipelines/by-idempotency-key',
    service: 'api-gateway',
    operationId: 'getPipelineByIdempotencyKey',
    tag: PIPELINES,
    summary: 'Read a pipeline by its idempotency key',
    description: 'The key is in the body so that it stays out of URLs and access logs.',
    security: 'apiKey',
    body: { schema: 'PipelineIdempotencyLookupRequest', required: true },
    success: { '200': { description: 'the pipeline', body: 'PipelineResponse' } },
    errors: {
      '400': 'validation',
      '401': 'missing or invalid X-API-Key',
      '404': 'no pipeline for this application and key',
    },
  },
  {
    method: 'get',
    path: '/pipelines/{pipelineId}',
    service: 'api-gateway',
    operationId: 'getPipeline',
    tag: PIPELINES,
    summary: 'Read a pipeline with its stages',
    security: 'apiKey',
    parameters: ['pipelineId'],
    success: { '200': { description: 'the pipeline', body: 'PipelineResponse' } },
    errors: {
      '400': 'invalid `pipelineId`',
      '401': 'missing or invalid X-API-Key',
      '403': 'the pipeline belongs to another application',
      '404': 'no such pipeline',
    },
  },
  {
    method: 'post',
    path: '/pipelines/{pipelineId}/cancel',
    service: 'api-gateway',
    operationId: 'cancelPipeline',
    tag: PIPELINES,
    summary: 'Cancel a pipeline',
    description:
      'Unfinished stages become Cancelled atomically. A request body, if any, is ignored.',
    security: 'apiKey',
    parameters: ['pipelineId'],
    success: { '200': { description: 'the cancelled pipeline', body: 'PipelineResponse' } },
    errors: {
      '400': 'invalid `pipelineId`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such pipeline in this application',
      '409': '`pipeline_terminal`: the pipeline is already terminal',
      '413': 'the (ignored) body is over API_MAX_BODY_BYTES',
      '504': 'cancellation timed out',
    },
  },
  {
    method: 'post',
    path: '/pipelines/{pipelineId}/stages',
    service: 'api-gateway',
    operationId: 'appendStages',
    tag: PIPELINES,
    summary: 'Append stages to a pipeline',
    description:
      'New stages are created with status NotStarted; a pipeline has at most 100 stages.',
    security: 'apiKey',
    parameters: ['pipelineId'],
    body: { schema: 'AppendStagesRequest', required: true },
    success: { '200': { description: 'the appended stages', body: 'AppendStagesResponse' } },
    errors: {
      '400': 'validation',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such pipeline in this application',
      '409': '`pipeline_terminal`: the pipeline is terminal; nothing was appended',
    },
  },
  {
    method: 'post',
    path: '/stages/{stageId}/resume',
    service: 'api-gateway',
    operationId: 'resumeStage',
    tag: PIPELINES,
    summary: 'Approve or reject a stage that waits for approval',
    security: 'apiKey',
    parameters: ['stageId'],
    body: { schema: 'ResumeStageRequest', required: true },
    success: { '204': empty('resumed; empty body') },
    errors: {
      '400': 'validation',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such stage in this application',
      '409':
        '`stage_not_waiting`: the stage is not waiting for approval; `decision_conflict`: the decision contradicts the recorded one',
    },
  },
  // Schedules ---------------------------------------------------------------------------------
  {
    method: 'get',
    path: '/schedules',
    service: 'api-gateway',
    operationId: 'listSchedules',
    tag: SCHEDULES,
    summary: 'List schedules',
    description: 'All statuses unless `status` is given; ordered by id ascending.',
    security: 'apiKey',
    parameters: ['status', 'cursor', 'limit'],
    success: { '200': { description: 'a page of schedules', body: 'SchedulePage' } },
    errors: {
      '400': 'invalid `status`, `limit` or `cursor`',
      '401': 'missing or invalid X-API-Key',
    },
  },
  {
    method: 'put',
    path: '/schedules/{name}',
    service: 'api-gateway',
    operationId: 'upsertSchedule',
    tag: SCHEDULES,
    summary: 'Create or update a schedule',
    description:
      'The definition is validated like pipeline creation. `definitionVersion` goes up only when a behaviour-changing difference is stored.',
    security: 'apiKey',
    parameters: ['name'],
    body: { schema: 'ScheduleUpsertRequest', required: true },
    success: {
      '201': { description: 'a new schedule', body: 'Schedule' },
      '200': { description: 'the updated or unchanged schedule', body: 'Schedule' },
    },
    errors: {
      '400': 'validation, with per-field messages',
      '401': 'missing or invalid X-API-Key',
      '500': 'could not be stored',
    },
  },
  {
    method: 'get',
    path: '/schedules/{name}',
    service: 'api-gateway',
    operationId: 'getSchedule',
    tag: SCHEDULES,
    summary: 'Read a schedule',
    security: 'apiKey',
    parameters: ['name'],
    success: { '200': { description: 'the schedule', body: 'Schedule' } },
    errors: {
      '400': 'invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such schedule in this application',
    },
  },
  {
    method: 'get',
    path: '/schedules/{name}/runs',
    service: 'api-gateway',
    operationId: 'listScheduleRuns',
    tag: SCHEDULES,
    summary: 'List the runs of a schedule, newest first',
    security: 'apiKey',
    parameters: ['name', 'cursor', 'limit'],
    success: { '200': { description: 'a page of runs', body: 'ScheduleRunPage' } },
    errors: {
      '400': 'invalid `name`, `limit` or `cursor`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such schedule in this application',
    },
  },
  {
    method: 'post',
    path: '/schedules/{name}/pause',
    service: 'api-gateway',
    operationId: 'pauseSchedule',
    tag: SCHEDULES,
    summary: 'Pause a schedule',
    security: 'apiKey',
    parameters: ['name'],
    success: { '200': { description: 'the schedule', body: 'Schedule' } },
    errors: {
      '400': 'invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such schedule in this application',
      '409': '`schedule_archived`: the schedule is archived',
    },
  },
  {
    method: 'post',
    path: '/schedules/{name}/resume',
    service: 'api-gateway',
    operationId: 'resumeSchedule',
    tag: SCHEDULES,
    summary: 'Resume a paused schedule',
    description: 'The next run is planned from now; no backlog of missed ticks is owed.',
    security: 'apiKey',
    parameters: ['name'],
    success: { '200': { description: 'the schedule', body: 'Schedule' } },
    errors: {
      '400': '`not_plannable`: the stored schedule can no longer be planned; or invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such schedule in this application',
      '409':
        '`no_future_run`: a Once schedule whose runAt is past; `schedule_archived`: the schedule is archived',
    },
  },
  {
    method: 'post',
    path: '/schedules/{name}/archive',
    service: 'api-gateway',
    operationId: 'archiveSchedule',
    tag: SCHEDULES,
    summary: 'Archive a schedule',
    security: 'apiKey',
    parameters: ['name'],
    success: { '200': { description: 'the schedule', body: 'Schedule' } },
    errors: {
      '400': 'invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such schedule in this application',
    },
  },
  {
    method: 'post',
    path: '/schedules/{name}/trigger',
    service: 'api-gateway',
    operationId: 'triggerSchedule',
    tag: SCHEDULES,
    summary: 'Run a schedule now (manual trigger)',
    description:
      'Creates a run with trigger Manual and its pipeline. The body is optional; `input` replaces the first stage input.',
    security: 'apiKey',
    parameters: ['name'],
    body: {
      schema: 'ScheduleTriggerRequest',
      required: false,
      description:
        'optional: no body, or an empty one, is allowed; a present body must be an object',
    },
    success: {
      '201': { description: 'the manual run and its pipeline', body: 'ScheduleTriggerResponse' },
    },
    errors: {
      '400': 'invalid payload or `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such schedule in this application',
      '409': '`schedule_archived`: the schedule is archived',
      '500': 'the pipeline could not be created (the run is recorded as Failed)',
    },
  },
  // Worker activity -----------------------------------------------------------------------------
  {
    method: 'get',
    path: '/workers',
    service: 'api-gateway',
    operationId: 'listWorkers',
    tag: WORKER_ACTIVITY,
    summary: 'List the workers of the application',
    description:
      'Ordered by createdAt, then workerId, ascending. Status, last heartbeat and counters are as the worker last reported them; `sessionExpiresAt` is that of the current session.',
    security: 'apiKey',
    parameters: ['cursor', 'limit'],
    success: { '200': { description: 'a page of workers', body: 'WorkerPage' } },
    errors: {
      '400': 'invalid `limit` or `cursor`',
      '401': 'missing or invalid X-API-Key',
    },
  },
  {
    method: 'get',
    path: '/workers/{workerId}/events',
    service: 'api-gateway',
    operationId: 'listWorkerEvents',
    tag: WORKER_ACTIVITY,
    summary: 'List the events of a worker, newest first',
    description:
      'Lifecycle events sent with POST /workers/events, and those the service records (`started` at bootstrap, `stopped` at shutdown), newest recorded first.',
    security: 'apiKey',
    parameters: ['workerId', 'cursor', 'limit'],
    success: { '200': { description: 'a page of events', body: 'WorkerEventPage' } },
    errors: {
      '400': 'invalid `workerId`, `limit` or `cursor`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such worker in this application',
    },
  },
  // Worker protocol ---------------------------------------------------------------------------
  {
    method: 'post',
    path: '/workers/bootstrap',
    service: 'worker-gateway',
    operationId: 'bootstrapWorker',
    tag: WORKER_PROTOCOL,
    summary: 'Register a worker instance and open a session',
    description:
      'Stable workerId per (application, instanceId). A new bootstrap issues a new token and makes the previous one invalid everywhere. HTTP workers use jobs/pull and ignore `messageBroker.connectionString`.',
    security: 'apiKey',
    body: { schema: 'BootstrapRequest', required: true },
    success: { '200': { description: 'the session', body: 'BootstrapResponse' } },
    errors: {
      '400': 'malformed body',
      '401': 'missing or invalid X-API-Key',
      '500': 'application resolution or worker registration failed',
      '503': 'broker hand-out enabled but no broker address configured',
    },
  },
  {
    method: 'post',
    path: '/workers/heartbeat',
    service: 'worker-gateway',
    operationId: 'workerHeartbeat',
    tag: WORKER_PROTOCOL,
    summary: 'Report liveness and counters',
    description: 'Does not extend the session. After a shutdown it makes the worker Active again.',
    security: 'session',
    body: { schema: 'HeartbeatRequest', required: true },
    success: { '200': empty('recorded; empty body (Content-Length: 0)') },
    errors: {
      '400': 'malformed body',
      '401': 'missing, invalid or expired session, or it does not match `workerId`',
      '500': 'worker state could not be persisted',
    },
  },
  {
    method: 'post',
    path: '/workers/events',
    service: 'worker-gateway',
    operationId: 'workerEvents',
    tag: WORKER_PROTOCOL,
    summary: 'Record a batch of worker lifecycle events',
    description: `At most WORKER_EVENTS_MAX_BATCH events per call (default ${limits.workerEventsMaxBatchDefault}; the schema shows the default).`,
    security: 'session',
    body: { schema: 'WorkerEventsRequest', required: true },
    success: { '200': empty('recorded; empty body (Content-Length: 0)') },
    errors: {
      '400': 'malformed body, a bad event, or a batch that is empty or too large',
      '401': 'missing, invalid or expired session, or it does not match `workerId`',
      '500': 'events could not be persisted',
    },
  },
  {
    method: 'post',
    path: '/workers/shutdown',
    service: 'worker-gateway',
    operationId: 'workerShutdown',
    tag: WORKER_PROTOCOL,
    summary: 'Announce a worker shutdown',
    description:
      'Marks the worker Stopped and records a `stopped` event. Session expiry is not checked and the token stays valid.',
    security: 'session',
    body: { schema: 'ShutdownRequest', required: true },
    success: { '200': empty('recorded; empty body (Content-Length: 0)') },
    errors: {
      '400': 'malformed body',
      '401': 'missing or invalid session, or it does not match `workerId`',
      '500': 'worker state could not be persisted',
    },
  },
  {
    method: 'post',
    path: '/jobs/pull',
    service: 'worker-gateway',
    operationId: 'pullJob',
    tag: WORKER_PROTOCOL,
    summary: 'Pull a stage job',
    description:
      'Waits up to `waitSeconds`. The `token` of a 200 is held only by the process that served the pull: acknowledge on the same process.',
    security: 'apiKey',
    body: { schema: 'PullJobRequest', required: true },
    success: {
      '200': { description: 'a delivery', body: 'PullJobResponse' },
      '204': empty('no message before the deadline; empty body'),
    },
    errors: {
      '400': 'missing `queue` or `waitSeconds` outside 0..20',
      '401': 'missing or invalid X-API-Key',
      '403':
        "the queue is outside this application's `app_{applicationId}_{handler}_StageNext` pattern",
      '429': 'too many in-flight deliveries; back off and retry (`Retry-After`)',
      '500': 'pull failed',
    },
  },
  {
    method: 'post',
    path: '/jobs/ack',
    service: 'worker-gateway',
    operationId: 'ackJob',
    tag: WORKER_PROTOCOL,
    summary: 'Acknowledge or requeue a pulled delivery',
    description: 'The body `token` is the credential. Repeating an ack is not idempotent.',
    security: 'none',
    body: { schema: 'AckJobRequest', required: true },
    success: { '200': empty('acknowledged or requeued; empty body (Content-Length: 0)') },
    errors: {
      '400': 'missing token',
      '404':
        'the token is not held by this process (expired, already acknowledged, or held by another replica)',
      '500': 'ack failed',
    },
  },
  {
    method: 'post',
    path: '/stages/{stageId}/lease/acquire',
    service: 'worker-gateway',
    operationId: 'acquireStageLease',
    tag: WORKER_PROTOCOL,
    summary: 'Acquire the execution lease of a delivered stage',
    description: 'A refusal is a 200 with `acquired` false and a `reason`.',
    security: 'session',
    parameters: ['stageId'],
    body: { schema: 'StageLeaseRequest', required: true },
    success: { '200': { description: 'granted or refused', body: 'StageLeaseResponse' } },
    errors: {
      '400': 'invalid `stageId` or body',
      '401': 'missing, invalid or expired session',
      '404': 'no such stage in the session application',
      '500': 'lease operation failed',
    },
  },
  {
    method: 'post',
    path: '/stages/{stageId}/lease/renew',
    service: 'worker-gateway',
    operationId: 'renewStageLease',
    tag: WORKER_PROTOCOL,
    summary: 'Renew the execution lease',
    description:
      'A refusal (`acquired` false) is definitive: stop handler side effects. The delivery visibility timeout is not extended.',
    security: 'session',
    parameters: ['stageId'],
    body: { schema: 'StageLeaseRequest', required: true },
    success: { '200': { description: 'renewed or refused', body: 'StageLeaseResponse' } },
    errors: {
      '400': 'invalid `stageId` or body',
      '401': 'missing, invalid or expired session',
      '404': 'no such stage in the session application',
      '500': 'lease operation failed',
    },
  },
  {
    method: 'post',
    path: '/stages/{stageId}/result',
    service: 'worker-gateway',
    operationId: 'submitStageResult',
    tag: WORKER_PROTOCOL,
    summary: 'Submit the result of a stage execution',
    description:
      'A 202 means broker acceptance, not an applied update; stale results are discarded by fencing. Acknowledge the delivery after the 202.',
    security: 'apiKeyAndSession',
    parameters: ['stageId'],
    body: { schema: 'StageResultSubmit', required: true },
    bodyLimitBytes: limits.resultRequestBytes,
    success: { '202': { description: 'accepted by the broker', body: 'StageResultAccepted' } },
    errors: {
      '400': 'validation, or `stageId` differs from the route',
      '401':
        'missing, invalid, expired or application-mismatched session, or missing or invalid X-API-Key',
      '403': 'the stage belongs to another application',
      '404': 'no such stage',
      '500': 'session, ownership or result encoding failure',
      '503': 'broker unavailable; retry the request',
    },
  },
  // System ------------------------------------------------------------------------------------
  {
    method: 'get',
    path: '/version',
    service: 'api-gateway',
    operationId: 'getVersion',
    tag: SYSTEM,
    summary: 'Server version and licence tier',
    security: 'none',
    success: { '200': { description: 'build metadata', body: 'VersionInfo' } },
    errors: {},
  },
  {
    method: 'post',
    path: '/logs',
    service: 'api-gateway',
    operationId: 'storeLog',
    tag: SYSTEM,
    summary: 'Store a free-form log line (legacy)',
    description:
      'An optional body `apiKey` attaches the line to an application when it matches a non-disabled key (expiry is not checked). Never 401.',
    security: 'none',
    body: { schema: 'LogRequest', required: true },
    success: { '200': { description: 'stored', body: 'LogResponse' } },
    errors: {
      '400': 'malformed body, or a missing or empty `message`',
      '500': 'the log or its keywords could not be stored',
    },
  },
  {
    method: 'get',
    path: '/openapi.json',
    service: 'api-gateway',
    operationId: 'getOpenApiDocument',
    tag: SYSTEM,
    summary: 'This OpenAPI document',
    security: 'none',
    success: {
      '200': {
        description: 'the OpenAPI 3.1 document of the whole API',
        body: { type: 'object', description: 'an OpenAPI 3.1 document' },
      },
    },
    errors: {},
  },
  {
    method: 'get',
    path: '/healthz',
    service: 'api-gateway',
    operationId: 'getHealth',
    tag: SYSTEM,
    summary: 'Liveness of the process',
    description: 'Every service answers it on its own port.',
    security: 'none',
    success: {
      '200': {
        description: 'the process is up',
        body: {
          type: 'object',
          required: ['status'],
          properties: { status: { type: 'string', const: 'ok' } },
        },
      },
    },
    errors: {},
  },
  {
    method: 'get',
    path: '/readyz',
    service: 'api-gateway',
    operationId: 'getReadiness',
    tag: SYSTEM,
    summary: 'Readiness: every dependency answers',
    description: 'Every service answers it on its own port, with its own dependencies.',
    security: 'none',
    success: {
      '200': { description: 'ready', body: readinessSchema('ready') },
      '503': { description: 'a dependency does not answer', body: readinessSchema('not_ready') },
    },
    errors: {},
  },
];

function readinessSchema(status: string): JsonMap {
  return {
    type: 'object',
    required: ['status', 'checks'],
    properties: {
      status: { type: 'string', const: status },
      checks: {
        type: 'object',
        description: 'dependency name → state',
        additionalProperties: { type: 'string', enum: ['ok', 'unavailable'] },
      },
    },
  };
}

function bodySchema(body: string | JsonMap): JsonMap {
  return typeof body === 'string' ? { $ref: componentRef(body) } : body;
}

function operation(spec: OperationSpec): OpenApiOperation {
  const responses: Record<string, OpenApiResponse | OpenApiReference> = {};
  for (const [status, success] of Object.entries(spec.success)) {
    responses[status] =
      success.body === undefined
        ? { description: success.description }
        : {
            description: success.description,
            content: { [JSON_TYPE]: { schema: bodySchema(success.body) } },
          };
  }
  const errors: Record<string, string> = { ...spec.errors };
  if (spec.body !== undefined) {
    errors['413'] ??=
      spec.bodyLimitBytes === undefined
        ? 'the body is over API_MAX_BODY_BYTES (default 33554432)'
        : `the body is over ${spec.bodyLimitBytes} bytes`;
  }
  errors['500'] ??= 'unexpected failure';
  const statuses = Object.keys(errors).sort();
  for (const status of statuses) {
    const problem = PROBLEM_RESPONSES[status];
    if (problem === undefined) throw new Error(`no problem response for status ${status}`);
    responses[status] = {
      $ref: `#/components/responses/${problem.name}`,
      description: errors[status] ?? problem.description,
    };
  }
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    'x-service': spec.service,
    security: SECURITY[spec.security],
    ...(spec.parameters === undefined
      ? {}
      : {
          parameters: spec.parameters.map((name) => ({ $ref: `#/components/parameters/${name}` })),
        }),
    ...(spec.body === undefined
      ? {}
      : {
          requestBody: {
            required: spec.body.required,
            ...(spec.body.description === undefined ? {} : { description: spec.body.description }),
            content: { [JSON_TYPE]: { schema: { $ref: componentRef(spec.body.schema) } } },
          },
        }),
    responses,
  };
}

function paths(): Record<string, OpenApiPathItem> {
  const out: Record<string, OpenApiPathItem> = {};
  for (const spec of OPERATIONS) {
    const item = (out[spec.path] ??= {});
    if (item[spec.method] !== undefined) throw new Error(`duplicate ${spec.method} ${spec.path}`);
    item[spec.method] = operation(spec);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Components other than schemas

function parameters(): OpenApiDocument['components']['parameters'] {
  const id = { type: 'integer', minimum: 1, maximum: MAX_ID } as const;
  return {
    pipelineId: {
      name: 'pipelineId',
      in: 'path',
      required: true,
      description: 'pipeline id: digits without leading zeros, at most 2^53-1',
      schema: { ...id },
    },
    stageId: {
      name: 'stageId',
      in: 'path',
      required: true,
      description: 'stage id: digits without leading zeros, at most 2^53-1',
      schema: { ...id },
    },
    name: {
      name: 'name',
      in: 'path',
      required: true,
      description:
        'schedule name (URL-encoded): 1..200 characters, no control characters; application-scoped, matched case-insensitively',
      schema: { type: 'string', minLength: 1, maxLength: limits.scheduleNameChars },
    },
    workerId: {
      name: 'workerId',
      in: 'path',
      required: true,
      description: 'worker id as returned by bootstrap (opaque)',
      schema: { type: 'string', minLength: 1, maxLength: WORKER_ID_MAX_CHARS },
    },
    limit: {
      name: 'limit',
      in: 'query',
      required: false,
      description: 'page size',
      schema: {
        type: 'integer',
        minimum: limits.pageSizeMin,
        maximum: limits.pageSizeMax,
        default: limits.pageSizeDefault,
      },
    },
    cursor: {
      name: 'cursor',
      in: 'query',
      required: false,
      description:
        '`nextCursor` of the previous page of the same listing; a cursor issued for another listing is a 400',
      schema: { type: 'string', minLength: 1 },
    },
    status: {
      name: 'status',
      in: 'query',
      required: false,
      description: 'only schedules in this status (default: all)',
      schema: { type: 'string', enum: [...SCHEDULE_STATUSES] },
    },
  };
}

function problemResponses(): Record<string, OpenApiResponse> {
  const out: Record<string, OpenApiResponse> = {};
  for (const [status, { name, description }] of Object.entries(PROBLEM_RESPONSES)) {
    out[name] = {
      description,
      ...(status === '429'
        ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }
        : {}),
      content: { [PROBLEM_TYPE]: { schema: { $ref: componentRef('ProblemDetails') } } },
    };
  }
  return out;
}

/**
 * The OpenAPI 3.1 document of the whole external API: every endpoint of the api-gateway and the
 * worker-gateway (one base URL), with components.schemas generated from every registered schema.
 * A new object on every call; deterministic (same input, same document).
 */
export function buildOpenApiDocument(): OpenApiDocument {
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    info: {
      title: 'Pipeline Orchestration Service API',
      version: API_VERSION,
      description: [
        'Pipelines, stages, schedules, the HTTP worker protocol and worker activity, behind one base URL.',
        'Bodies are UTF-8 JSON; every 4xx and 5xx is `application/problem+json` (ProblemDetails), unknown routes included.',
        'Response date-times are UTC with three fractional digits and `Z`; request date-times need an offset.',
        'Unknown request members are accepted and ignored. `x-max-bytes` limits UTF-8 bytes of a string (or of the compact JSON of another value); `x-no-control-characters` forbids Unicode Cc characters; `x-service` names the service behind an operation.',
        'Generated from the JSON Schemas of @po/contracts (docs/openapi.json is a committed copy).',
      ].join('\n\n'),
    },
    tags: TAGS.map((tag) => ({ ...tag })),
    paths: paths(),
    components: {
      schemas: componentSchemas(),
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'Application API key (`pos_…`).',
        },
        WorkerSession: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Worker-Session',
          description: 'Worker session token returned by POST /workers/bootstrap.',
        },
      },
      parameters: parameters(),
      headers: {
        RetryAfter: {
          description: 'seconds to wait before retrying (at least 1)',
          schema: { type: 'integer', minimum: 1 },
        },
      },
      responses: problemResponses(),
    },
  };
}
