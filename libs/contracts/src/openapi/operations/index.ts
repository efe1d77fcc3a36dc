import { DASHBOARD_OPERATIONS } from './dashboard.js';
import { HANDLER_OPERATIONS } from './handlers.js';
import { BULK_OPERATIONS } from './operations.js';
import { PIPELINE_OPERATIONS } from './pipelines.js';
import { SCHEDULE_OPERATIONS } from './schedules.js';
import type { OperationSpec } from './spec.js';
import { SYSTEM_OPERATIONS } from './system.js';
import { WORKER_ACTIVITY_OPERATIONS } from './worker-activity.js';
import { WEBHOOK_OPERATIONS } from './webhooks.js';
import { WORKER_PROTOCOL_OPERATIONS } from './worker-protocol.js';

export { SECURITY, TAGS } from './spec.js';
export type { OperationSpec } from './spec.js';

// The order of the paths in the document (and in docs/openapi.json) is this order.
export const OPERATIONS: OperationSpec[] = [
  ...PIPELINE_OPERATIONS,
  ...BULK_OPERATIONS,
  ...SCHEDULE_OPERATIONS,
  ...HANDLER_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...WORKER_ACTIVITY_OPERATIONS,
  ...DASHBOARD_OPERATIONS,
  ...WORKER_PROTOCOL_OPERATIONS,
  ...SYSTEM_OPERATIONS,
];
