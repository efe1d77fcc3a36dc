import {
  formatDateTime,
  formatNullableDateTime,
  WEBHOOKS_PER_APPLICATION_MAX,
  type WebhookCreated,
  type WebhookDeliveryList,
  type WebhookDeliveryView,
  type WebhookEvent,
  type WebhookDeliveryStatus,
  type WebhookList,
  type WebhookRequest,
  type WebhookView,
} from '@po/contracts';
import {
  countWebhooks,
  deleteWebhook,
  findWebhook,
  listWebhookDeliveries,
  listWebhooks,
  retryWebhookDelivery,
  upsertWebhook,
  type WebhookDeliveryRecord,
  type WebhookRecord,
} from '@po/db';
import { DomainError, NotFound, ValidationFailed, newWebhookSecret } from '@po/domain';
import { listingOf, readCursor, refusedWebhookTarget } from '@po/http';
import type { Deps } from '../deps.js';

/** Webhooks of an application (issue 32, decision 0134): PUT, GET, DELETE, deliveries, retry. */

class TooManyWebhooks extends DomainError {
  constructor() {
    super(
      'conflict',
      `An application has at most ${WEBHOOKS_PER_APPLICATION_MAX} webhooks: delete one first.`,
    );
  }
}

export function webhookView(w: WebhookRecord): WebhookView {
  return {
    name: w.name,
    url: w.url,
    events: w.events as WebhookEvent[],
    enabled: w.enabled,
    createdAt: formatDateTime(w.createdAt),
    updatedAt: formatDateTime(w.updatedAt),
  };
}

function deliveryView(d: WebhookDeliveryRecord): WebhookDeliveryView {
  return {
    id: d.id,
    eventType: d.eventType as WebhookEvent,
    status: d.status as WebhookDeliveryStatus,
    attempts: d.attempts,
    lastResponseCode: d.lastResponseCode,
    lastError: d.lastError,
    nextAttemptAt: formatNullableDateTime(d.nextAttemptAt),
    createdAt: formatDateTime(d.createdAt),
    deliveredAt: formatNullableDateTime(d.deliveredAt),
  };
}

const notFound = (name: string) => new NotFound(`Webhook ${name} not found.`);

/**
 * Creates the webhook (answering its secret, once) or replaces its url, events and enabled. The
 * target is refused if its host resolves to an internal address, unless the service allows it;
 * the deliverer checks again at every attempt.
 */
export async function putWebhook(
  deps: Deps,
  applicationId: number,
  name: string,
  body: WebhookRequest,
): Promise<{ created: boolean; view: WebhookView | WebhookCreated }> {
  // The route's validator (validateWebhookRequest) already refused a URL that does not parse.
  const refused = await refusedWebhookTarget(new URL(body.url), deps.webhookAllowPrivateNetworks);
  if (refused) throw ValidationFailed.at('/url', refused);
  const secret = newWebhookSecret();
  const { created, webhook } = await deps.sql.transaction(async (q) => {
    const r = await upsertWebhook(
      q,
      applicationId,
      name,
      { url: body.url, events: body.events, enabled: body.enabled ?? true },
      secret,
    );
    // Counted after the insert, in its transaction: a creation past the limit is rolled back (two
    // at the same instant may both pass; the limit is a guard against runaway scripts, not a quota).
    if (r.created && (await countWebhooks(q, applicationId)) > WEBHOOKS_PER_APPLICATION_MAX)
      throw new TooManyWebhooks();
    return r;
  });
  return { created, view: created ? { ...webhookView(webhook), secret } : webhookView(webhook) };
}

export async function getWebhook(
  deps: Deps,
  applicationId: number,
  name: string,
): Promise<WebhookView> {
  const w = await findWebhook(deps.sql, applicationId, name);
  if (!w) throw notFound(name);
  return webhookView(w);
}

export async function listWebhooksOf(deps: Deps, applicationId: number): Promise<WebhookList> {
  return { items: (await listWebhooks(deps.sql, applicationId)).map(webhookView) };
}

export async function removeWebhook(
  deps: Deps,
  applicationId: number,
  name: string,
): Promise<void> {
  if (!(await deleteWebhook(deps.sql, applicationId, name))) throw notFound(name);
}

export async function deliveriesOf(
  deps: Deps,
  applicationId: number,
  name: string,
  page: { limit: number; cursor: string | undefined },
): Promise<WebhookDeliveryList> {
  // Signed cursors bound to the listing, like the other list routes (decision 0089).
  const token = readCursor(page.cursor, ['text']);
  const w = await findWebhook(deps.sql, applicationId, name);
  if (!w) throw notFound(name);
  const cursors = await deps.cursors();
  const key = listingOf('webhook-deliveries', { applicationId, webhookId: w.id });
  const before = cursors.verifyOptional(key, token)?.[0] as string | undefined;
  const r = await listWebhookDeliveries(deps.sql, applicationId, w.id, {
    limit: page.limit,
    before: before ?? null,
  });
  return {
    items: r.items.map(deliveryView),
    nextCursor: r.nextBefore === null ? null : cursors.issue(key, [r.nextBefore]),
  };
}

/** One more attempt now, under the same webhook-id. */
export async function retryDelivery(
  deps: Deps,
  applicationId: number,
  name: string,
  id: string,
): Promise<WebhookDeliveryView> {
  const w = await findWebhook(deps.sql, applicationId, name);
  if (!w) throw notFound(name);
  const d = await retryWebhookDelivery(deps.sql, applicationId, w.id, id);
  if (!d) throw new NotFound(`Delivery ${id} of webhook ${name} not found.`);
  return deliveryView(d);
}
