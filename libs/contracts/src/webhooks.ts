// Signed webhooks (issue 32, decision 0134): PUT, GET and DELETE /webhooks/{name}, GET /webhooks,
// GET /webhooks/{name}/deliveries and POST /webhooks/{name}/deliveries/{id}/retry.
import {
  arrayOf,
  bool,
  enumOf,
  int,
  named,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import { compile, registerSchemas } from './validate.js';
import type { Validation, Validator } from './validate.js';

/** The events a webhook can take. */
export const WEBHOOK_EVENTS = [
  'pipeline.completed',
  'pipeline.failed',
  'pipeline.cancelled',
  'stage.failed',
  'stage.waiting_for_approval',
  'schedule.run_missed',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const WEBHOOK_DELIVERY_STATUSES = ['Pending', 'Delivered', 'Failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

export const WEBHOOK_NAME_MAX = 100;
export const WEBHOOK_URL_MAX = 2048;
/** Webhooks of one application at most. */
export const WEBHOOKS_PER_APPLICATION_MAX = 50;

// ---------------------------------------------------------------------------------------------
// Types

export interface WebhookRequest {
  url: string;
  events: WebhookEvent[];
  enabled?: boolean;
}

export interface WebhookView {
  name: string;
  url: string;
  events: WebhookEvent[];
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The answer of the PUT that created the webhook: the only one with its signing secret. */
export interface WebhookCreated extends WebhookView {
  secret: string;
}

export interface WebhookList {
  items: WebhookView[];
}

export interface WebhookDeliveryView {
  id: string;
  eventType: WebhookEvent;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastResponseCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface WebhookDeliveryList {
  items: WebhookDeliveryView[];
  /** Pass as `cursor` for the next (older) page; null on the last one. */
  nextCursor: string | null;
}

// ---------------------------------------------------------------------------------------------
// Schemas

const events = () =>
  arrayOf(enumOf(WEBHOOK_EVENTS), { minItems: 1, maxItems: WEBHOOK_EVENTS.length });
const webhookMembers = {
  name: str({ minLength: 1, maxLength: WEBHOOK_NAME_MAX }),
  url: str({ minLength: 1, maxLength: WEBHOOK_URL_MAX }),
  events: events(),
  enabled: bool(),
  createdAt: utcDateTime(),
  updatedAt: utcDateTime(),
};

export const webhookRequestSchema = named(
  'WebhookRequest',
  {
    url: {
      ...str({ minLength: 1, maxLength: WEBHOOK_URL_MAX, noControlCharacters: true }),
      description:
        'http or https, without credentials; a private, loopback or link-local address is refused unless the service allows private networks',
    },
    events: { ...events(), uniqueItems: true, description: 'the events it takes' },
    enabled: bool(
      'default true; a disabled webhook takes no new events and its pending deliveries wait',
    ),
  },
  { required: ['url', 'events'] },
);

export const webhookViewSchema = response(
  'WebhookView',
  webhookMembers,
  'a webhook of the application; its secret is shown only when it is created',
);
export const webhookCreatedSchema = response(
  'WebhookCreated',
  {
    ...webhookMembers,
    secret: {
      ...str({ minLength: 10 }),
      description: 'the Standard Webhooks signing secret (whsec_…), shown in this answer only',
    },
  },
  'a webhook just created, with its signing secret',
);
export const webhookListSchema = response(
  'WebhookList',
  { items: arrayOf(ref('WebhookView')) },
  "the application's webhooks, by name",
);

export const webhookDeliveryViewSchema = response(
  'WebhookDeliveryView',
  {
    id: {
      ...str({ minLength: 1 }),
      description: 'the webhook-id header, the same on every attempt',
    },
    eventType: enumOf(WEBHOOK_EVENTS),
    status: enumOf(WEBHOOK_DELIVERY_STATUSES),
    attempts: int(0),
    lastResponseCode: nullable(int(100, 599)),
    lastError: nullable(str()),
    nextAttemptAt: {
      ...nullable(utcDateTime()),
      description: 'when a Pending delivery is attempted next',
    },
    createdAt: utcDateTime(),
    deliveredAt: nullable(utcDateTime()),
  },
  'one event for one webhook, and how its attempts went',
);
export const webhookDeliveryListSchema = response(
  'WebhookDeliveryList',
  {
    items: arrayOf(ref('WebhookDeliveryView')),
    nextCursor: {
      ...nullable(str()),
      description: 'pass as `cursor` for the next, older page; null on the last one',
    },
  },
  "a webhook's deliveries, newest first",
);

registerSchemas(
  webhookRequestSchema,
  webhookViewSchema,
  webhookCreatedSchema,
  webhookListSchema,
  webhookDeliveryViewSchema,
  webhookDeliveryListSchema,
);

// ---------------------------------------------------------------------------------------------
// Validators

const checkRequest: Validator<WebhookRequest> = compile(webhookRequestSchema);

/** The target's form; whether its address may be used is the gateway's check (it resolves the name). */
export function parseWebhookUrl(raw: string): Validation<URL> {
  const fail = (message: string): Validation<URL> => ({
    ok: false,
    errors: [{ field: '/url', message }],
  });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail('must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return fail('must be an http or https URL');
  if (url.username !== '' || url.password !== '')
    return fail('must not carry credentials: verify the signature instead');
  if (url.hash !== '') return fail('must not have a fragment');
  return { ok: true, value: url };
}

export function validateWebhookRequest(data: unknown): Validation<WebhookRequest> {
  const result = checkRequest(data);
  if (!result.ok) return result;
  const url = parseWebhookUrl(result.value.url);
  if (!url.ok) return url;
  return result;
}

/** `{name}` of a webhook: 1..100 of letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
export function parseWebhookName(raw: string): Validation<string> {
  if (/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(raw) && raw.length <= WEBHOOK_NAME_MAX)
    return { ok: true, value: raw };
  return {
    ok: false,
    errors: [
      {
        field: 'name',
        message: `must be 1 to ${WEBHOOK_NAME_MAX} letters, digits, '.', '_' or '-', starting with a letter or digit`,
      },
    ],
  };
}

/** `{id}` of a delivery. */
export function parseWebhookDeliveryId(raw: string): Validation<string> {
  if (/^msg_[0-9a-f]{32}$/.test(raw)) return { ok: true, value: raw };
  return {
    ok: false,
    errors: [{ field: 'id', message: 'must be a delivery id (msg_ and 32 hex digits)' }],
  };
}
