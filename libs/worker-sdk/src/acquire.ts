// The lease of a delivery that did not bring one (a pull without `lease`, or a gateway that gave no
// answer): acquired with a few retries; a delivery whose acquisition keeps failing goes back to its
// queue, one refused outright is dropped.
import type { JobDeps } from './job.js';
import { describe, isRetryable } from './errors.js';
import type { LogFields } from './logger.js';
import type { PullJobResponse, StageLeaseResponse } from './protocol.js';
import { deliveryTraceparent } from './tracing.js';
import { backoffDelay, sleep } from './util.js';

/** A lease, with when the request that got it was sent (the SDK counts the lease from then). */
export interface Granted {
  lease: StageLeaseResponse;
  sentAt: number;
}

export async function acquireLease(
  deps: JobDeps,
  delivery: PullJobResponse,
  fields: LogFields,
): Promise<Granted | 'unavailable' | 'rejected'> {
  const { client, session, logger, options } = deps;
  const m = delivery.payload;
  for (let i = 0; ; i++) {
    const sentAt = performance.now();
    try {
      const lease = await session.call((token, workerId) =>
        client.acquireLease(
          token,
          m.stageId,
          { executionId: m.executionId, workerId },
          deliveryTraceparent(delivery.headers),
        ),
      );
      return { lease, sentAt };
    } catch (err) {
      if (isRetryable(err) && i < 2) {
        const delay = backoffDelay(i, options.retryBaseDelayMs, options.retryMaxDelayMs);
        if (await sleep(delay, deps.abandonSignal)) continue;
      }
      const retryable = isRetryable(err);
      logger.warn(
        retryable
          ? 'lease acquisition failed; returning the delivery to the queue'
          : 'lease acquisition rejected; dropping the delivery',
        { ...fields, error: describe(err) },
      );
      if (!retryable) {
        deps.events.push({
          kind: 'error',
          stageId: m.stageId,
          pipelineId: m.pipelineId,
          message: `lease acquisition rejected: ${describe(err)}`,
        });
      }
      return retryable ? 'unavailable' : 'rejected';
    }
  }
}
