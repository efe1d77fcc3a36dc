import { DomainError, Forbidden, NotFound } from '@po/domain';
import { parseStageQueueName } from '@po/contracts';
import { pullWait, rememberSensitiveItems } from '@po/telemetry';
import type { Deliveries, Delivery } from './deliveries.js';
import { pullTraceparent } from './observe.js';

export class TooManyInflight extends DomainError {
  readonly retryAfterSeconds = 1;
  constructor(max: number) {
    super('too_many_inflight', `This gateway process holds ${max} deliveries; back off and retry.`, true);
  }
}

/**
 * POST /jobs/pull: only the application's own `app_{id}_{handler}_StageNext` queues (addendum §15).
 * A delivery comes with the W3C traceparent its worker continues the pipeline's trace from.
 */
export async function pullJob(
  deliveries: Deliveries,
  applicationId: number,
  request: { queue: string; waitSeconds?: number },
  signal: AbortSignal,
): Promise<{ delivery: Delivery; traceparent: string } | null> {
  const parsed = parseStageQueueName(request.queue);
  if (!parsed || parsed.applicationId !== applicationId) {
    throw new Forbidden(`Queue ${request.queue} is not one of this application's StageNext queues.`);
  }
  if (deliveries.full()) throw new TooManyInflight(deliveries.inflight);
  const started = Date.now();
  const delivery = await deliveries.pull(request.queue, request.waitSeconds ?? 0, signal);
  pullWait()
    .labels(delivery ? 'message' : 'empty')
    .observe((Date.now() - started) / 1000);
  if (!delivery) return null;
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
