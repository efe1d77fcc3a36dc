import {
  apiKeyAuth,
  clientGone,
  createRouter,
  jsonBody,
  sendEmpty,
  sendJson,
  type ApiKeyResolver,
  type Router,
} from '@po/http';
import { bodyLimits, validateAck, validatePull, type AckJobRequest, type PullJobRequest } from '@po/contracts';
import { Unauthorized } from '@po/domain';
import type { Deliveries } from '../../deliveries/deliveries.js';
import { ackJob, deliveryResponse, pullJob } from '../../deliveries/operations.js';
import type { Deps } from '../../deps.js';

export function jobRoutes(deps: Deps, deliveries: Deliveries, resolveKey: ApiKeyResolver): Router {
  const router = createRouter();
  // Ack has no credentials, so its body is read for anyone: both bodies are a queue name or a token.
  const limit = Math.min(bodyLimits.small, deps.config.maxBodyBytes);
  router.post('/jobs/pull', apiKeyAuth(resolveKey), jsonBody(validatePull, limit), async (ctx) => {
    const request = ctx.state.body as PullJobRequest;
    const sessionToken = ctx.get('x-worker-session');
    // A lease asked for without a session could never be granted: refuse before taking a message.
    if (request.lease && !sessionToken) throw new Unauthorized('Missing X-Worker-Session header.');
    // Stop waiting (and hand a late message back) when the client goes away mid-poll.
    const gone = clientGone(ctx);
    const pulled = await pullJob(deliveries, ctx.state.applicationId!, request, gone, deps.brokerReady);
    if (!pulled) return sendEmpty(ctx, 204);
    const lease = request.lease ? { sessionToken, workerId: request.lease.workerId } : undefined;
    sendJson(ctx, 200, await deliveryResponse(deps, pulled, lease, gone));
  });
  router.post('/jobs/ack', jsonBody(validateAck, limit), async (ctx) => {
    await ackJob(deliveries, ctx.state.body as AckJobRequest);
    sendEmpty(ctx, 200);
  });
  return router;
}
