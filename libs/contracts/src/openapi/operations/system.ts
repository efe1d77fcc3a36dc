import { bodyLimits } from '../../limits.js';
import type { JsonMap } from '../types.js';
import { SYSTEM } from './spec.js';
import type { OperationSpec } from './spec.js';

/**
 * What an operation without input of its own can still answer: requests the HTTP server refuses
 * before any route (libs/http server.ts), as problem+json like every other 4xx.
 */
const BEFORE_ROUTING: Record<string, string> = {
  '400': 'a request that is not valid HTTP/1.1 (a malformed request line or header), refused before routing',
  '431': 'the request line and headers exceed the 16 KiB the HTTP server reads, refused before routing',
};

export const SYSTEM_OPERATIONS: OperationSpec[] = [
  {
    method: 'get',
    path: '/version',
    service: 'api-gateway',
    operationId: 'getVersion',
    tag: SYSTEM,
    summary: 'Server version and licence tier',
    security: 'none',
    success: { '200': { description: 'build metadata', body: 'VersionInfo' } },
    errors: BEFORE_ROUTING,
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
    bodyLimitBytes: bodyLimits.log,
    success: { '200': { description: 'stored', body: 'LogResponse' } },
    errors: {
      '400': 'malformed body, or a missing or empty `message`',
      '429': '`rate_limited`: this client address sent more than LOGS_ANON_BURST lines at once or LOGS_ANON_RATE_PER_MINUTE a minute; retry after `Retry-After` seconds',
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
    errors: BEFORE_ROUTING,
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
    errors: BEFORE_ROUTING,
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
    errors: BEFORE_ROUTING,
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
