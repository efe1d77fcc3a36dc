import { BrokerUnavailable, Forbidden, NotFound } from '@po/domain';
import { limits, parseStageQueueName, type PullJobResponse, type PullNextRequest } from '@po/contracts';
import { pickupLatency, pullWait, rememberSensitiveItems, withTraceparent } from '@po/telemetry';
import type { Deps } from '../deps.js';
import { leaseOnPull, type LeaseResponse } from '../leases/operations.js';
import { payloadOf } from './context-snapshots.js';
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

/** 403 unless `queue` is one of the application's own StageNext queues (addendum §15). */
export function checkOwnQueue(queue: string, applicationId: number): void {
  if (!ownQueue(queue, applicationId)) {
    throw new Forbidden(`Queue ${queue.slice(0, 400)} is not one of this application's StageNext queues.`);
  }
}

/**
 * POST /jobs/pull: only the application's own `app_{id}_{handler}_StageNext` queues (addendum §15);
 * a handler longer than any stage may have is outside that pattern too. A delivery comes with the
 * W3C traceparent its worker continues the pipeline's trace from. While the broker is away it
 * answers 503 broker_unavailable at once: the fetch would only wait on the connection (which keeps
 * commands until Redis is back) until the pull's deadline (decision 0120).
 */
export async function pullJob(
  deliveries: Deliveries,
  applicationId: number,
  request: { queue: string; waitSeconds?: number },
  signal: AbortSignal,
  brokerReady: () => boolean,
): Promise<{ delivery: Delivery; traceparent: string } | null> {
  checkOwnQueue(request.queue, applicationId);
  if (!brokerReady()) throw new BrokerUnavailable('The message broker is unavailable; pull again later. Leases, heartbeats and sessions are still served.');
  const started = Date.now();
  return delivered(await deliveries.pull(request.queue, applicationId, request.waitSeconds ?? 0, signal), started);
}

/** What a pull answers for the delivery it got, with the pull's metrics. */
function delivered(delivery: Delivery | null, started: number): { delivery: Delivery; traceparent: string } | null {
  pullWait()
    .labels(delivery ? 'message' : 'empty')
    .observe((Date.now() - started) / 1000);
  if (!delivery) return null;
  // dispatchedAt is another process's clock: a small skew must not record a negative wait.
  const dispatchedAt = Date.parse(delivery.payload.dispatchedAt);
  if (Number.isFinite(dispatchedAt)) pickupLatency().observe(Math.max(0, Date.now() - dispatchedAt) / 1000);
  return { delivery, traceparent: pullTraceparent(delivery) };
}

/** PullJobResponse as this process builds it. */
export type DeliveryAnswer = Omit<PullJobResponse, 'lease'> & { lease?: LeaseResponse | null };

/**
 * The PullJobResponse of a delivery. With `lease` (decision 0098) the delivered stage's lease is
 * acquired for that worker under the delivery's stage.pull span, as the worker's own acquire would
 * be: `lease` null when that got no answer, absent when the client is gone.
 */
export async function deliveryResponse(
  deps: Deps,
  pulled: { delivery: Delivery; traceparent: string },
  lease: { sessionToken: string; workerId: string } | undefined,
  signal: AbortSignal,
): Promise<DeliveryAnswer> {
  const { delivery, traceparent } = pulled;
  const [answer, payload] = await Promise.all([
    lease && !signal.aborted
      ? withTraceparent(traceparent, () => leaseOnPull(deps, lease.sessionToken, delivery.payload, lease.workerId)).then((a) => a ?? null)
      : undefined,
    payloadOf(deps.db, delivery.payload),
  ]);
  // The payload holds the real context values: the logger censors the sensitive ones from now on.
  rememberSensitiveItems(payload.pipelineContextItems);
  return {
    token: delivery.token,
    queue: delivery.queue,
    payload,
    messageId: delivery.messageId,
    headers: { traceparent },
    ...(answer === undefined ? {} : { lease: answer }),
    ...(delivery.backlog ? { backlog: true } : {}),
  };
}

/**
 * The pull a result carries (decision 0100), once the result is accepted: one fetch, no wait. The
 * result's 202 stands whatever happens here, so a limit (429), a broker failure or an empty queue
 * all answer null, and the worker pulls as usual. The queue was checked before the result was taken.
 * `taken`: what the ack's broker call already fetched for it (decision 0110).
 */
export async function pullNext(
  deps: Deps,
  deliveries: Deliveries,
  applicationId: number,
  next: PullNextRequest,
  sessionToken: string,
  signal: AbortSignal,
  taken?: Delivery | null,
): Promise<DeliveryAnswer | null> {
  try {
    const pulled =
      taken === undefined ? await pullJob(deliveries, applicationId, { queue: next.queue, waitSeconds: 0 }, signal, deps.brokerReady) : delivered(taken, Date.now());
    if (!pulled) return null;
    const lease = next.lease ? { sessionToken, workerId: next.lease.workerId } : undefined;
    return await deliveryResponse(deps, pulled, lease, signal);
  } catch (err) {
    deps.logger.debug({ err, queue: next.queue }, 'pull with a result took nothing; the worker pulls as usual');
    return null;
  }
}

/** POST /jobs/ack: the token alone authorises it; 404 when this process does not hold it. */
export async function ackJob(deliveries: Deliveries, request: { token: string; requeue?: boolean }): Promise<void> {
  let acked: boolean;
  try {
    acked = await deliveries.ack(request.token, request.requeue ?? false);
  } catch {
    // The broker did not confirm it: 503 with Retry-After, and the delivery stays held for the retry.
    throw new BrokerUnavailable();
  }
  if (!acked) {
    throw new NotFound('This process holds no delivery for that token (expired, already acknowledged, or held by another replica).');
  }
}
