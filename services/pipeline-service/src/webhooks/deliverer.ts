import {
  claimWebhookDeliveries,
  settleWebhookDelivery,
  type DeliveryAttempt,
  type Sql,
} from '@po/db';
import { nextWebhookAttemptIn } from '@po/domain';
import { sendWebhook, type WebhookSendResult } from '@po/http';
import type { Logger } from '@po/telemetry';
import { startTicking } from '../ticking.js';

/**
 * Delivers webhooks from the outbox (decision 0134). Every tick it takes the due deliveries
 * (SKIP LOCKED: replicas share them) and pushes each one's next attempt past the attempt's
 * deadline before sending it, so a replica that dies mid-attempt (kill -9) leaves the delivery due
 * again a little later: at least once, with the same webhook-id. The outcome is written after the
 * attempt; a failure waits for its next turn in the schedule, and the last one is Failed.
 */

export interface WebhookDelivererOptions {
  tickMs: number;
  /** One attempt's whole exchange. */
  timeoutMs: number;
  /** Attempts in flight at once, per replica. */
  concurrency: number;
  /** Seconds before each attempt (the Standard Webhooks schedule unless configured). */
  schedule: readonly number[];
  allowPrivateNetworks: boolean;
}

export interface WebhookDelivererDeps {
  sql: Sql;
  logger: Logger;
  send?: typeof sendWebhook;
}

const USER_AGENT = 'pipeline-orchestration-webhooks/0.5.0';

export function startWebhookDeliverer(
  deps: WebhookDelivererDeps,
  options: WebhookDelivererOptions,
): { stop(): Promise<void> } {
  const send = deps.send ?? sendWebhook;
  // Past the attempt's deadline, with room for the outcome's write.
  const leaseSeconds = options.timeoutMs / 1000 + 5;

  async function attempt(d: DeliveryAttempt): Promise<void> {
    let result: WebhookSendResult;
    try {
      result = await send({
        url: d.url,
        secret: d.secret,
        id: d.id,
        body: d.body,
        timeoutMs: options.timeoutMs,
        allowPrivateNetworks: options.allowPrivateNetworks,
        userAgent: USER_AGENT,
      });
    } catch (err) {
      result = { ok: false, status: null, error: (err as Error).message };
    }
    const next = result.ok ? null : nextWebhookAttemptIn(d.attempts + 1, options.schedule);
    await settleWebhookDelivery(
      deps.sql,
      d,
      result.ok
        ? { delivered: true, responseCode: result.status }
        : {
            delivered: false,
            responseCode: result.status,
            error: result.error,
            nextAttemptInSeconds: next,
          },
    );
    if (!result.ok)
      deps.logger.info(
        {
          deliveryId: d.id,
          attempt: d.attempts + 1,
          status: result.status,
          error: result.error,
          nextAttemptInSeconds: next,
        },
        next === null ? 'webhook delivery failed, no attempts left' : 'webhook attempt failed',
      );
  }

  async function tick(): Promise<void> {
    try {
      const due = await claimWebhookDeliveries(deps.sql, options.concurrency, leaseSeconds);
      await Promise.all(
        due.map((d) =>
          attempt(d).catch((err: unknown) =>
            deps.logger.warn(
              { err, deliveryId: d.id },
              'webhook attempt not recorded; it is attempted again',
            ),
          ),
        ),
      );
      // A full batch: more may be due now.
      if (due.length === options.concurrency && !ticking.stopping) return tick();
    } catch (err) {
      deps.logger.warn({ err }, 'webhook deliverer: claim failed; retried next tick');
    }
  }

  const ticking = startTicking(tick, options.tickMs);
  return { stop: () => ticking.stop() };
}
