import { DASHBOARD, WORKER_ACTIVITY } from './spec.js';
import type { OperationSpec } from './spec.js';

const NOT_MODIFIED = {
  description:
    'not modified: `If-None-Match` names the ETag of the current body (every JSON GET of the api-gateway answers with a strong ETag and `Cache-Control: no-store`)',
};

export const DASHBOARD_OPERATIONS: OperationSpec[] = [
  {
    method: 'get',
    path: '/overview',
    service: 'api-gateway',
    operationId: 'getOverview',
    tag: DASHBOARD,
    summary: 'Throughput, live pipelines and queue depth of the application',
    description:
      'Stages and pipelines that finished Completed or Failed in twelve five-minute buckets (oldest first; the last one is the current five minutes), the pipelines not yet finished by status, and for each handler the application has stages of (at most 200, by name) the depth of its StageNext queue. Read from PostgreSQL and the broker, not from metrics.',
    security: 'apiKey',
    success: { '200': { description: 'the overview', body: 'Overview' }, '304': NOT_MODIFIED },
    errors: {
      '401': 'missing or invalid X-API-Key',
      '503': '`broker_unavailable`: the queue depths cannot be read now',
    },
  },
  {
    method: 'get',
    path: '/worker-events',
    service: 'api-gateway',
    operationId: 'listFleetWorkerEvents',
    tag: WORKER_ACTIVITY,
    summary: 'List the events of every worker of the application, newest first',
    description:
      'The activity feed of the fleet: the events of GET /workers/{workerId}/events of all the application\'s workers, with the worker each came from, newest recorded first.',
    security: 'apiKey',
    parameters: ['cursor', 'limit'],
    success: { '200': { description: 'a page of events', body: 'FleetWorkerEventPage' }, '304': NOT_MODIFIED },
    errors: {
      '400': 'invalid `limit` or `cursor`',
      '401': 'missing or invalid X-API-Key',
    },
  },
];
