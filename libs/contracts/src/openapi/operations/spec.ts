import type { HttpMethod, JsonMap, ServiceName } from '../types.js';

type Security = 'none' | 'apiKey' | 'session' | 'apiKeyAndSession';
type Parameter =
  | 'pipelineId'
  | 'stageId'
  | 'name'
  | 'workerId'
  | 'limit'
  | 'cursor'
  | 'status'
  // GET /pipelines (decision 0089)
  | 'pipelineStatus'
  | 'pipelineNamePrefix'
  | 'keyword'
  | 'scheduleName'
  | 'createdAfter'
  | 'createdBefore'
  | 'stageHandlerName'
  | 'handlerName'
  | 'operationId'
  // Webhooks (decision 0134)
  | 'webhookName'
  | 'deliveryId';

interface Success {
  description: string;
  /** A component schema name, an inline schema, or nothing for an empty body. */
  body?: string | JsonMap;
}

export interface OperationSpec {
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
  /** 413 limit when it is not API_MAX_BODY_BYTES (which caps it, except for results). */
  bodyLimitBytes?: number;
  success: Record<string, Success>;
  /** Error status → what it means for this operation. */
  errors: Record<string, string>;
}

export const SECURITY: Record<Security, Record<string, string[]>[]> = {
  none: [],
  apiKey: [{ ApiKey: [] }],
  session: [{ WorkerSession: [] }],
  apiKeyAndSession: [{ ApiKey: [], WorkerSession: [] }],
};

export const PIPELINES = 'Pipelines';
export const SCHEDULES = 'Schedules';
export const HANDLERS = 'Handlers';
export const OPERATIONS_TAG = 'Operations';
export const WEBHOOKS = 'Webhooks';
export const WORKER_PROTOCOL = 'Worker protocol';
export const WORKER_ACTIVITY = 'Worker activity';
export const SYSTEM = 'System';
export const DASHBOARD = 'Dashboard';

export const TAGS = [
  { name: PIPELINES, description: 'Pipelines and stages (api-gateway).' },
  { name: SCHEDULES, description: 'Named, application-scoped schedules (api-gateway).' },
  {
    name: HANDLERS,
    description:
      'Handlers of an application: pause, concurrency and rate limits, and their backlog (api-gateway).',
  },
  {
    name: OPERATIONS_TAG,
    description:
      'Bulk rerun and cancel of the pipelines a filter matches, run by the service at a set pace (api-gateway, pipeline-service).',
  },
  {
    name: WEBHOOKS,
    description:
      'Signed webhooks (Standard Webhooks) of pipeline, stage and schedule events, and their delivery log (api-gateway; delivered by pipeline-service).',
  },
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
  {
    name: DASHBOARD,
    description:
      'Throughput, live pipelines and queue depth, for the dashboard under /ui/ (api-gateway).',
  },
  { name: SYSTEM, description: 'Version, legacy logs, this document and health (api-gateway).' },
];

export const empty = (description: string): Success => ({ description });
