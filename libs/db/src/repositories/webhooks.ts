import { jsonParam, statement, type Queryable } from '../sql.js';

/**
 * Webhooks of an application and the outbox of their deliveries (decision 0134). The outbox rows
 * of pipeline and stage events are written by the triggers of migration 20261129010000_webhooks,
 * in the transaction of the change; `enqueueWebhookEvent` writes one for an event no row update
 * carries (a schedule's missed run). Every statement an API route runs is scoped by the application.
 */

export interface WebhookRecord {
  id: number;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookDeliveryRecord {
  id: string;
  eventType: string;
  status: string;
  attempts: number;
  lastResponseCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

interface RawWebhook {
  id: number;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

const webhookOf = (r: RawWebhook): WebhookRecord => ({
  id: r.id,
  name: r.name,
  url: r.url,
  events: r.events,
  enabled: r.enabled,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
const WEBHOOK_COLUMNS = 'id::float8 AS id, name, url, events, enabled, created_at, updated_at';

const UPSERT = statement(
  'webhook_upsert',
  `INSERT INTO webhooks AS w (application_id, name, url, events, enabled, secret)
   VALUES ($1::int, $2::text, $3::text, $4::text[], $5::boolean, $6::text)
   ON CONFLICT (application_id, name) DO UPDATE SET
     url = excluded.url, events = excluded.events, enabled = excluded.enabled, updated_at = now()
   RETURNING ${WEBHOOK_COLUMNS}, (xmax = 0) AS created`,
);

const COUNT = statement(
  'webhook_count',
  `SELECT count(*)::int AS n FROM webhooks WHERE application_id = $1::int`,
);
const FIND = statement(
  'webhook_find',
  `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE application_id = $1::int AND name = $2::text`,
);
const LIST = statement(
  'webhook_list',
  `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE application_id = $1::int ORDER BY name COLLATE "C"`,
);
const DELETE = statement(
  'webhook_delete',
  `DELETE FROM webhooks WHERE application_id = $1::int AND name = $2::text RETURNING 1 AS gone`,
);

export async function countWebhooks(q: Queryable, applicationId: number): Promise<number> {
  const [row] = await q.query<{ n: number }>(COUNT, [applicationId]);
  return row?.n ?? 0;
}

/**
 * Creates the webhook with `secret`, or replaces its url, events and enabled (keeping its secret).
 * `created` tells which.
 */
export async function upsertWebhook(
  q: Queryable,
  applicationId: number,
  name: string,
  values: { url: string; events: readonly string[]; enabled: boolean },
  secret: string,
): Promise<{ created: boolean; webhook: WebhookRecord }> {
  const [row] = await q.query<RawWebhook & { created: boolean }>(UPSERT, [
    applicationId,
    name,
    values.url,
    values.events,
    values.enabled,
    secret,
  ]);
  if (!row) throw new Error('webhook upsert returned no row');
  return { created: row.created, webhook: webhookOf(row) };
}

export async function findWebhook(
  q: Queryable,
  applicationId: number,
  name: string,
): Promise<WebhookRecord | null> {
  const [row] = await q.query<RawWebhook>(FIND, [applicationId, name]);
  return row ? webhookOf(row) : null;
}

export async function listWebhooks(q: Queryable, applicationId: number): Promise<WebhookRecord[]> {
  return (await q.query<RawWebhook>(LIST, [applicationId])).map(webhookOf);
}

/** Deletes the webhook and its deliveries; false when there was none. */
export async function deleteWebhook(
  q: Queryable,
  applicationId: number,
  name: string,
): Promise<boolean> {
  return (await q.query<{ gone: number }>(DELETE, [applicationId, name])).length > 0;
}

interface RawDelivery {
  id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_response_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
}

const deliveryOf = (r: RawDelivery): WebhookDeliveryRecord => ({
  id: r.id,
  eventType: r.event_type,
  status: r.status,
  attempts: r.attempts,
  lastResponseCode: r.last_response_code,
  lastError: r.last_error,
  nextAttemptAt: r.status === 'Pending' ? r.next_attempt_at : null,
  createdAt: r.created_at,
  deliveredAt: r.delivered_at,
});
const DELIVERY_COLUMNS =
  'd.id, d.event_type, d.status, d.attempts, d.last_response_code, d.last_error, d.next_attempt_at, d.created_at, d.delivered_at';

// Newest first; `before` a delivery of the same webhook: the page after it.
const DELIVERIES = statement(
  'webhook_deliveries_page',
  `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
   WHERE d.webhook_id = $1::bigint AND d.application_id = $2::int
     AND ($3::text IS NULL OR (d.created_at, d.id) < (SELECT b.created_at, b.id FROM webhook_deliveries b WHERE b.id = $3::text AND b.webhook_id = $1::bigint))
   ORDER BY d.created_at DESC, d.id DESC
   LIMIT $4::int`,
);

export async function listWebhookDeliveries(
  q: Queryable,
  applicationId: number,
  webhookId: number,
  page: { limit: number; before: string | null },
): Promise<{ items: WebhookDeliveryRecord[]; nextBefore: string | null }> {
  const rows = await q.query<RawDelivery>(DELIVERIES, [
    webhookId,
    applicationId,
    page.before,
    page.limit + 1,
  ]);
  const items = rows.slice(0, page.limit).map(deliveryOf);
  return { items, nextBefore: rows.length > page.limit ? items[items.length - 1]!.id : null };
}

// A retry is one more attempt now, under the same id, whatever its status (a Delivered one is sent again).
const RETRY = statement(
  'webhook_delivery_retry',
  `UPDATE webhook_deliveries d SET status = 'Pending', next_attempt_at = now()
   WHERE d.id = $1::text AND d.webhook_id = $2::bigint AND d.application_id = $3::int
   RETURNING ${DELIVERY_COLUMNS}`,
);

export async function retryWebhookDelivery(
  q: Queryable,
  applicationId: number,
  webhookId: number,
  id: string,
): Promise<WebhookDeliveryRecord | null> {
  const [row] = await q.query<RawDelivery>(RETRY, [id, webhookId, applicationId]);
  return row ? deliveryOf(row) : null;
}

// No void column in the answer: Prisma's raw queries (the scheduler's guarded path) cannot read one.
const ENQUEUE = statement(
  'webhook_enqueue',
  `SELECT 1 AS done FROM webhook_enqueue($1::int, $2::text, $3::json)`,
);

/** Writes the outbox rows of an event for the application's enabled webhooks that take it (none: nothing). */
export async function enqueueWebhookEvent(
  q: Queryable,
  applicationId: number,
  type: string,
  data: unknown,
): Promise<void> {
  await q.query(ENQUEUE, [applicationId, type, jsonParam(data)]);
}

export interface DeliveryAttempt {
  id: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
  url: string;
  secret: string;
  /** The claim's lease: the delivery's next_attempt_at while this attempt is in flight. */
  leasedUntil: Date;
}

// Due Pending deliveries of enabled webhooks, oldest due first. Taking one moves its next attempt
// past the attempt's deadline: a deliverer that dies mid-attempt leaves it due again then.
const CLAIM = statement(
  'webhook_deliveries_claim',
  `WITH due AS (
     SELECT d.id FROM webhook_deliveries d
     WHERE d.status = 'Pending' AND d.next_attempt_at <= now()
       AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND w.enabled)
     ORDER BY d.next_attempt_at
     LIMIT $1::int
     FOR UPDATE SKIP LOCKED
   ), taken AS (
     UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => $2::float8)
     FROM due WHERE d.id = due.id
     RETURNING d.id, d.body, d.attempts, d.webhook_id, d.next_attempt_at
   )
   SELECT t.id, t.body, t.attempts, w.url, w.secret, t.next_attempt_at AS "leasedUntil" FROM taken t JOIN webhooks w ON w.id = t.webhook_id`,
);

export async function claimWebhookDeliveries(
  q: Queryable,
  limit: number,
  leaseSeconds: number,
): Promise<DeliveryAttempt[]> {
  return q.query<DeliveryAttempt>(CLAIM, [limit, leaseSeconds]);
}

export type AttemptOutcome =
  | { delivered: true; responseCode: number }
  | {
      delivered: false;
      responseCode: number | null;
      error: string;
      nextAttemptInSeconds: number | null;
    };

// Only the attempt that was claimed is settled (its attempt count). A retry by hand while it was in
// flight moved next_attempt_at off the claim's lease: the outcome is recorded, but unless it was
// delivered the delivery stays Pending at the due time the retry gave it.
const SETTLE = statement(
  'webhook_delivery_settle',
  `UPDATE webhook_deliveries SET
     attempts = attempts + 1,
     status = CASE WHEN $3::boolean THEN 'Delivered'
                   WHEN next_attempt_at IS DISTINCT FROM $7::timestamptz THEN 'Pending'
                   WHEN $6::float8 IS NULL THEN 'Failed' ELSE 'Pending' END,
     delivered_at = CASE WHEN $3::boolean THEN now() ELSE delivered_at END,
     last_response_code = $4::int,
     last_error = CASE WHEN $3::boolean THEN NULL ELSE left($5::text, 500) END,
     next_attempt_at = CASE WHEN $3::boolean THEN NULL
                            WHEN next_attempt_at IS DISTINCT FROM $7::timestamptz THEN next_attempt_at
                            WHEN $6::float8 IS NULL THEN NULL
                            ELSE now() + make_interval(secs => $6::float8) END
   WHERE id = $1::text AND attempts = $2::int AND status = 'Pending'`,
);

export async function settleWebhookDelivery(
  q: Queryable,
  attempt: Pick<DeliveryAttempt, 'id' | 'attempts' | 'leasedUntil'>,
  outcome: AttemptOutcome,
): Promise<void> {
  await q.query(SETTLE, [
    attempt.id,
    attempt.attempts,
    outcome.delivered,
    outcome.responseCode,
    outcome.delivered ? null : outcome.error,
    outcome.delivered ? null : outcome.nextAttemptInSeconds,
    attempt.leasedUntil.toISOString(),
  ]);
}
