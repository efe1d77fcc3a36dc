import { bodyLimits } from '../../limits.js';
import { HANDLERS } from './spec.js';
import type { OperationSpec } from './spec.js';

export const HANDLER_OPERATIONS: OperationSpec[] = [
  {
    method: 'get',
    path: '/handlers',
    service: 'api-gateway',
    operationId: 'listHandlers',
    tag: HANDLERS,
    summary: 'List the handlers of the application',
    description:
      'Every handler with stored settings, with Throttled, Pending or Running stages, or registered by an Active worker, by name. Each shows its settings and its stages now: backlog, running, oldest wait.',
    security: 'apiKey',
    success: { '200': { description: 'the handlers', body: 'HandlerList' } },
    errors: { '401': 'missing or invalid X-API-Key' },
  },
  {
    method: 'get',
    path: '/handlers/{name}',
    service: 'api-gateway',
    operationId: 'getHandler',
    tag: HANDLERS,
    summary: 'Read a handler',
    security: 'apiKey',
    parameters: ['handlerName'],
    success: { '200': { description: 'the handler', body: 'HandlerView' } },
    errors: {
      '400': 'invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404':
        'no settings, no Throttled, Pending or Running stage and no Active worker name this handler',
    },
  },
  {
    method: 'put',
    path: '/handlers/{name}',
    service: 'api-gateway',
    operationId: 'updateHandler',
    tag: HANDLERS,
    summary: 'Pause, resume or limit a handler',
    description:
      'Creates the settings when none exist (before any stage names the handler); an absent member keeps its value, null clears a limit. A pause stops new dispatches and pauses the handler queue; running stages finish. Loosening (resume, a limit raised or cleared) admits waiting stages at once.',
    security: 'apiKey',
    parameters: ['handlerName'],
    body: { schema: 'HandlerSettingsRequest', required: true },
    bodyLimitBytes: bodyLimits.small,
    success: { '200': { description: 'the handler as stored', body: 'HandlerView' } },
    errors: {
      '400': 'validation, with per-field messages',
      '401': 'missing or invalid X-API-Key',
    },
  },
];
