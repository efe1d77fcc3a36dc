import {
  apiKeyAuth,
  createRouter,
  jsonBody,
  sendEmpty,
  sendJson,
  type ApiKeyResolver,
  type Router,
} from '@po/http';
import { bodyLimits, validateAck, validatePull, type AckJobRequest, type PullJobRequest } from '@po/contracts';
import type { Deliveries } from '../../deliveries/deliveries.js';
import { ackJob, pullJob } from '../../deliveries/operations.js';

export function jobRoutes(
  deliveries: Deliveries,
  resolveKey: ApiKeyResolver,
  maxBodyBytes: number,
): Router {
  const router = createRouter();
  // Ack has no credentials, so its body is read for anyone: both bodies are a queue name or a token.
  const limit = Math.min(bodyLimits.small, maxBodyBytes);
  router.post('/jobs/pull', apiKeyAuth(resolveKey), jsonBody(validatePull, limit), async (ctx) => {
    // Stop waiting (and hand a late message back) when the client goes away mid-poll.
    const gone = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) gone.abort();
    };
    ctx.res.once('close', onClose);
    const pulled = await pullJob(
      deliveries,
      ctx.state.applicationId!,
      ctx.state.body as PullJobRequest,
      gone.signal,
    );
    if (!pulled) return sendEmpty(ctx, 204);
    const { delivery, traceparent } = pulled;
    sendJson(ctx, 200, {
      token: delivery.token,
      queue: delivery.queue,
      payload: delivery.payload,
      messageId: delivery.messageId,
      headers: { traceparent },
    });
  });
  router.post('/jobs/ack', jsonBody(validateAck, limit), async (ctx) => {
    await ackJob(deliveries, ctx.state.body as AckJobRequest);
    sendEmpty(ctx, 200);
  });
  return router;
}
