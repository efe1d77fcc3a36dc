import { MAX_ID } from '../fragments.js';
import { limits } from '../limits.js';
import { SEARCH_KEYWORDS_MAX } from '../pipeline-search.js';
import { PIPELINE_STATUSES } from '../pipelines.js';
import { SCHEDULE_STATUSES } from '../schedules.js';
import { API_VERSION } from '../system.js';
import { WORKER_ID_MAX_CHARS } from '../worker-activity.js';
import { WEBHOOK_NAME_MAX } from '../webhooks.js';
import { OPERATIONS, SECURITY, TAGS } from './operations/index.js';
import type { OperationSpec } from './operations/index.js';
import { componentRef, componentSchemas } from './schemas.js';
import type {
  JsonMap,
  OpenApiDocument,
  OpenApiOperation,
  OpenApiPathItem,
  OpenApiReference,
  OpenApiResponse,
} from './types.js';

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

const JSON_TYPE = 'application/json';
const PROBLEM_TYPE = 'application/problem+json';

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
      '`too_many_inflight` (pull) or `rate_limited` (POST /logs): retry after `Retry-After` seconds',
  },
  '431': {
    name: 'RequestHeaderTooLarge',
    description:
      '`request_header_too_large`: the request line and headers exceed the header limit the HTTP server reads (16 KiB)',
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
    pipelineStatus: {
      name: 'status',
      in: 'query',
      required: false,
      description: 'only pipelines in one of these statuses; repeat it for several (default: all)',
      schema: { type: 'array', items: { type: 'string', enum: [...PIPELINE_STATUSES] } },
    },
    pipelineNamePrefix: {
      name: 'name',
      in: 'query',
      required: false,
      description: 'only pipelines whose name starts with this text, compared case-insensitively',
      schema: { type: 'string', minLength: 1, maxLength: limits.pipelineNameChars },
    },
    keyword: {
      name: 'keyword',
      in: 'query',
      required: false,
      description: `only pipelines with a keyword of this key (\`KEY\`) or of this key and value (\`KEY=VALUE\`, split at the first \`=\`), compared exactly; repeat it (at most ${SEARCH_KEYWORDS_MAX} distinct) and every one must match`,
      schema: {
        type: 'array',
        maxItems: SEARCH_KEYWORDS_MAX,
        items: { type: 'string', minLength: 1, pattern: '^[^=]' },
      },
    },
    scheduleName: {
      name: 'scheduleName',
      in: 'query',
      required: false,
      description:
        'only pipelines created by this schedule of the application (name matched case-insensitively)',
      schema: { type: 'string', minLength: 1, maxLength: limits.scheduleNameChars },
    },
    createdAfter: {
      name: 'createdAfter',
      in: 'query',
      required: false,
      description: 'only pipelines created at or after this instant (RFC 3339 with an offset)',
      schema: { type: 'string', format: 'date-time' },
    },
    createdBefore: {
      name: 'createdBefore',
      in: 'query',
      required: false,
      description:
        'only pipelines created before this instant (RFC 3339 with an offset; later than `createdAfter` when both are given)',
      schema: { type: 'string', format: 'date-time' },
    },
    stageHandlerName: {
      name: 'stageHandlerName',
      in: 'query',
      required: false,
      description: 'only pipelines with a stage of exactly this handler',
      schema: { type: 'string', minLength: 1, maxLength: limits.stageHandlerNameChars },
    },
    operationId: {
      name: 'id',
      in: 'path',
      required: true,
      description:
        'operation id (POST /pipelines/bulk-rerun or bulk-cancel): digits without leading zeros',
      schema: { ...id },
    },
    handlerName: {
      name: 'name',
      in: 'path',
      required: true,
      description:
        'handler name (URL-encoded), as stages name it (`stageHandlerName`): 1..300 characters, matched exactly',
      schema: { type: 'string', minLength: 1, maxLength: limits.stageHandlerNameChars },
    },
    webhookName: {
      name: 'name',
      in: 'path',
      required: true,
      description: `webhook name: 1..${WEBHOOK_NAME_MAX} letters, digits, \`.\`, \`_\` or \`-\`, starting with a letter or digit`,
      schema: {
        type: 'string',
        minLength: 1,
        maxLength: WEBHOOK_NAME_MAX,
        pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
      },
    },
    deliveryId: {
      name: 'id',
      in: 'path',
      required: true,
      description: 'delivery id, the webhook-id header of its attempts',
      schema: { type: 'string', pattern: '^msg_[0-9a-f]{32}$' },
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
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    // Relative: the API is served from the root of the host that serves this document (one base
    // URL for both gateways), whatever that host is in a deployment.
    servers: [
      {
        url: '/',
        description: 'The base URL this document was fetched from (GET /openapi.json)',
      },
    ],
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
