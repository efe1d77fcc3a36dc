import { WORKER_ACTIVITY } from './spec.js';
import type { OperationSpec } from './spec.js';

export const WORKER_ACTIVITY_OPERATIONS: OperationSpec[] = [
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
];
