import { Forbidden, NotFound } from '@po/domain';
import { limits, parseStageQueueName } from '@po/contracts';
import { pickupLatency, pullWait, rememberSensitiveItems } from '@po/telemetry';
import type { Deliveries, Delivery } from './deliveries.js';
import { pullTraceparent } from './observe.js';

export { TooManyInflight } from './deliveries.js';

/** `app_{id}_` + a handler of at most 300 code points (2 UTF-16 units each) + `_StageNext`. */
const MAX_QUEUE_UNITS = 'app_9007199254740991_'.length + 2 * limits.stageHandlerNameChars + '_StageNext'.length;

/** Whether `queue` is the application's own `app_{id}_{handler}_StageNext` with a handler the spec allows (1..300 characters). */
function ownQueue(queue: string, applicationId: number): boolean {
  if (queue.length > MAX_QUEUE_UNITS) return false;
  const parsed = parseStageQueueName(queue);
  return parsed !== undefined && parsed.applicationId === applicationId && [...parsed.handler].length <= limits.stageHandlerNameChars;
}

/**
 * POST /jobs/pull: only the application's own `app_{id}_{handler}_StageNext` queues (addendum §15);
 * a handler longer than any stage may have is outside that pattern too. A delivery comes with the
 * W3C traceparent its worker continues the pipeline's trace from.
 */
export async function pullJob(
  deliveries: Deliveries,
  applicationId: number,
  request: { queue: string; waitSeconds?: number },
  signal: AbortSignal,
): Promise<{ delivery: Delivery; traceparent: string } | null> {
  if (!ownQueue(request.queue, applicationId)) {
    throw new Forbidden(`Queue ${request.queue.slice(0, 400)} is not one of this application's StageNext queues.`);
  }
  const started = Date.now();
  const delivery = await deliveries.pull(request.queue, applicationId, request.waitSeconds ?? 0, signal);
  pullWait()
    .labels(delivery ? 'message' : 'empty')
    .observe((Date.now() - started) / 1000);
  if (!delivery) return null;
  // dispatchedAt is another process's clock: a small skew must not record a negative wait.
  const dispatchedAt = Date.parse(delivery.payload.dispatchedAt);
  if (Number.isFinite(dispatchedAt)) pickupLatency().observe(Math.max(0, Date.now() - dispatchedAt) / 1000);
  // The payload holds the real context values: the logger censors the sensitive ones from now on.
  rememberSensitiveItems(delivery.payload.pipelineContextItems);
  return { delivery, traceparent: pullTraceparent(delivery) };
}

/** POST /jobs/ack: the token alone authorises it; 404 when this process does not hold it. */
export async function ackJob(deliveries: Deliveries, request: { token: string; requeue?: boolean }): Promise<void> {
  if (!(await deliveries.ack(request.token, request.requeue ?? false))) {
    throw new NotFound('This process holds no delivery for that token (expired, already acknowledged, or held by another replica).');
  }
}
