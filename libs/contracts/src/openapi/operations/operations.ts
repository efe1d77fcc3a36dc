import { bodyLimits } from '../../limits.js';
import { OPERATIONS_TAG } from './spec.js';
import type { OperationSpec } from './spec.js';

const BULK_ERRORS = {
  '400':
    'validation, with per-field messages (an empty filter, a filter matching more than 100,000 pipelines)',
  '401': 'missing or invalid X-API-Key',
  '409':
    '`conflict`: an operation of this kind is already running for the application (its id in the detail)',
  '413': 'the body is over 65536 bytes',
};

export const BULK_OPERATIONS: OperationSpec[] = [
  {
    method: 'post',
    path: '/pipelines/bulk-rerun',
    service: 'api-gateway',
    operationId: 'bulkRerunPipelines',
    tag: OPERATIONS_TAG,
    summary: 'Rerun every pipeline a filter matches',
    description:
      'The filter (the fields of GET /pipelines) is matched once, now: those pipelines are the operation’s, and pipeline-service reruns them one by one in id order at most `maxPerSecond` a second, each as POST /pipelines/{pipelineId}/rerun with `from` would (default `failed`: carry over what Completed). A pipeline that cannot be rerun (not finished, or Completed for `failed`) is counted failed with its reason; the rest go on. With `dryRun` nothing changes: the answer is the matched count and a sample. One rerun operation per application at a time.',
    security: 'apiKey',
    body: { schema: 'BulkRerunRequest', required: true },
    bodyLimitBytes: bodyLimits.small,
    success: {
      '200': { description: 'dryRun: what would be matched', body: 'BulkDryRun' },
      '202': {
        description: 'the operation, Running; GET /operations/{id} follows it',
        body: 'OperationView',
      },
    },
    errors: BULK_ERRORS,
  },
  {
    method: 'post',
    path: '/pipelines/bulk-cancel',
    service: 'api-gateway',
    operationId: 'bulkCancelPipelines',
    tag: OPERATIONS_TAG,
    summary: 'Cancel every pipeline a filter matches',
    description:
      'As bulk-rerun, each matched pipeline cancelled as POST /pipelines/{pipelineId}/cancel would; one already finished is counted failed. One cancel operation per application at a time.',
    security: 'apiKey',
    body: { schema: 'BulkCancelRequest', required: true },
    bodyLimitBytes: bodyLimits.small,
    success: {
      '200': { description: 'dryRun: what would be matched', body: 'BulkDryRun' },
      '202': { description: 'the operation, Running', body: 'OperationView' },
    },
    errors: BULK_ERRORS,
  },
  {
    method: 'get',
    path: '/operations/{id}',
    service: 'api-gateway',
    operationId: 'getOperation',
    tag: OPERATIONS_TAG,
    summary: 'Read a bulk operation',
    security: 'apiKey',
    parameters: ['operationId'],
    success: { '200': { description: 'the operation', body: 'OperationView' } },
    errors: {
      '400': 'invalid `id`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such operation in this application',
    },
  },
  {
    method: 'post',
    path: '/operations/{id}/cancel',
    service: 'api-gateway',
    operationId: 'cancelOperation',
    tag: OPERATIONS_TAG,
    summary: 'Stop a bulk operation',
    description:
      'No pipeline is started after the answer; those already rerun or cancelled stay so.',
    security: 'apiKey',
    parameters: ['operationId'],
    bodyLimitBytes: bodyLimits.small,
    success: { '200': { description: 'the operation, Cancelled', body: 'OperationView' } },
    errors: {
      '400': 'invalid `id`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no such operation in this application',
      '409': '`conflict`: the operation already ended',
    },
  },
];
