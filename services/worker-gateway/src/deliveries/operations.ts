import { DomainError, Forbidden, NotFound } from '@po/domain';
import { parseStageQueueName } from '@po/contracts';
import type { Deliveries, Delivery } from './deliveries.js';

export class TooManyInflight extends DomainError {
  readonly retryAfterSeconds = 1;
  constructor(max: number) {
    super('too_many_inflight', `This gateway process holds ${max} deliveries; back off and retry.`, true);
  }
}

/** POST /jobs/pull: only the application's own `app_{id}_{handler}_StageNext` queues (addendum §15). */
export async function pullJob(
  deliveries: Deliveries,
  applicationId: number,
  request: { queue: string; waitSeconds?: number },
  signal: AbortSignal,
): Promise<Delivery | null> {
  const parsed = parseStageQueueName(request.queue);
  if (!parsed || parsed.applicationId !== applicationId) {
    throw new Forbidden(`Queue ${request.queue} is not one of this application's StageNext queues.`);
  }
  if (deliveries.full()) throw new TooManyInflight(deliveries.inflight);
  return deliveries.pull(request.queue, request.waitSeconds ?? 0, signal);
}

/** POST /jobs/ack: the token alone authorises it; 404 when this process does not hold it. */
export async function ackJob(deliveries: Deliveries, request: { token: string; requeue?: boolean }): Promise<void> {
  if (!(await deliveries.ack(request.token, request.requeue ?? false))) {
    throw new NotFound('This process holds no delivery for that token (expired, already acknowledged, or held by another replica).');
  }
}
