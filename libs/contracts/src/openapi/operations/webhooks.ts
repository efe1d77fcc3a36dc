import { bodyLimits } from '../../limits.js';
import { WEBHOOKS } from './spec.js';
import type { OperationSpec } from './spec.js';

const SIGNING =
  'Deliveries are POSTs of `{type, timestamp, data}` signed as Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), at least once, from an outbox written in the transaction of the change; a non-2xx answer, a redirect or a timeout is retried on the Standard Webhooks schedule (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) under the same `webhook-id`.';

export const WEBHOOK_OPERATIONS: OperationSpec[] = [
  {
    method: 'get',
    path: '/webhooks',
    service: 'api-gateway',
    operationId: 'listWebhooks',
    tag: WEBHOOKS,
    summary: 'List the webhooks of the application',
    security: 'apiKey',
    success: {
      '200': { description: 'the webhooks, by name, without their secrets', body: 'WebhookList' },
    },
    errors: { '401': 'missing or invalid X-API-Key' },
  },
  {
    method: 'get',
    path: '/webhooks/{name}',
    service: 'api-gateway',
    operationId: 'getWebhook',
    tag: WEBHOOKS,
    summary: 'Read a webhook',
    security: 'apiKey',
    parameters: ['webhookName'],
    success: { '200': { description: 'the webhook, without its secret', body: 'WebhookView' } },
    errors: {
      '400': 'invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no webhook of this name',
    },
  },
  {
    method: 'put',
    path: '/webhooks/{name}',
    service: 'api-gateway',
    operationId: 'putWebhook',
    tag: WEBHOOKS,
    summary: 'Create or replace a webhook',
    description: `Creates the webhook and answers its signing secret (\`whsec_…\`), the only time it is shown; a PUT of an existing name replaces its url, events and enabled and keeps its secret. A target whose host resolves to a private, loopback or link-local address is refused unless the service runs with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true. ${SIGNING}`,
    security: 'apiKey',
    parameters: ['webhookName'],
    body: { schema: 'WebhookRequest', required: true },
    bodyLimitBytes: bodyLimits.small,
    success: {
      '201': {
        description: 'created; the answer carries the signing secret',
        body: 'WebhookCreated',
      },
      '200': { description: 'replaced', body: 'WebhookView' },
    },
    errors: {
      '400': 'validation, with per-field messages (a refused target on `/url`)',
      '401': 'missing or invalid X-API-Key',
      '409': 'the application has 50 webhooks already',
    },
  },
  {
    method: 'delete',
    path: '/webhooks/{name}',
    service: 'api-gateway',
    operationId: 'deleteWebhook',
    tag: WEBHOOKS,
    summary: 'Delete a webhook and its deliveries',
    security: 'apiKey',
    parameters: ['webhookName'],
    success: { '204': { description: 'deleted' } },
    errors: {
      '400': 'invalid `name`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no webhook of this name',
    },
  },
  {
    method: 'get',
    path: '/webhooks/{name}/deliveries',
    service: 'api-gateway',
    operationId: 'listWebhookDeliveries',
    tag: WEBHOOKS,
    summary: 'The delivery log of a webhook',
    description:
      'Newest first: status, attempts, the last response code or error, and when a Pending delivery is attempted next.',
    security: 'apiKey',
    parameters: ['webhookName', 'cursor', 'limit'],
    success: { '200': { description: 'a page of deliveries', body: 'WebhookDeliveryList' } },
    errors: {
      '400': 'invalid `name`, `limit` or `cursor`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no webhook of this name',
    },
  },
  {
    method: 'post',
    path: '/webhooks/{name}/deliveries/{id}/retry',
    service: 'api-gateway',
    operationId: 'retryWebhookDelivery',
    tag: WEBHOOKS,
    summary: 'Attempt a delivery again now',
    description:
      'One more attempt now, under the same `webhook-id`, whatever the delivery status (a Delivered one is sent again); the request body is ignored.',
    security: 'apiKey',
    parameters: ['webhookName', 'deliveryId'],
    bodyLimitBytes: bodyLimits.small,
    success: {
      '202': { description: 'the delivery, Pending, due now', body: 'WebhookDeliveryView' },
    },
    errors: {
      '400': 'invalid `name` or `id`',
      '401': 'missing or invalid X-API-Key',
      '404': 'no webhook of this name, or no such delivery of it',
    },
  },
];
