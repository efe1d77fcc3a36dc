import type { Middleware } from 'koa';
import { Unauthorized } from '@po/domain';
import {
  apiKeyAuth,
  createRouter,
  jsonBody,
  sendEmpty,
  sendJson,
  type ApiKeyResolver,
  type AppState,
  type Router,
} from '@po/http';
import {
  eventsRequestValidator,
  validateBootstrap,
  validateHeartbeat,
  validateShutdown,
  type BootstrapRequest,
  type HeartbeatRequest,
  type ShutdownRequest,
  type WorkerEventsRequest,
} from '@po/contracts';
import type { Deps } from '../../deps.js';
import { bootstrap, heartbeat, recordEvents, shutdown } from '../../sessions/operations.js';

/** A missing X-Worker-Session is a 401 before the body; matching it to workerId needs the body. */
const sessionHeader: Middleware<AppState> = async (ctx, next) => {
  if (!ctx.get('x-worker-session')) throw new Unauthorized('Missing X-Worker-Session header.');
  await next();
};

export function workerRoutes(deps: Deps, resolveKey: ApiKeyResolver): Router {
  const router = createRouter();
  const limit = deps.config.maxBodyBytes;
  router.post(
    '/workers/bootstrap',
    apiKeyAuth(resolveKey),
    jsonBody(validateBootstrap, limit),
    async (ctx) => {
      sendJson(
        ctx,
        200,
        await bootstrap(deps, ctx.state.applicationId!, ctx.state.body as BootstrapRequest),
      );
    },
  );
  router.post(
    '/workers/heartbeat',
    sessionHeader,
    jsonBody(validateHeartbeat, limit),
    async (ctx) => {
      await heartbeat(deps, ctx.get('x-worker-session'), ctx.state.body as HeartbeatRequest);
      sendEmpty(ctx, 200);
    },
  );
  router.post(
    '/workers/events',
    sessionHeader,
    jsonBody(eventsRequestValidator(deps.config.eventsMaxBatch), limit),
    async (ctx) => {
      await recordEvents(deps, ctx.get('x-worker-session'), ctx.state.body as WorkerEventsRequest);
      sendEmpty(ctx, 200);
    },
  );
  router.post(
    '/workers/shutdown',
    sessionHeader,
    jsonBody(validateShutdown, limit),
    async (ctx) => {
      await shutdown(deps, ctx.get('x-worker-session'), ctx.state.body as ShutdownRequest);
      sendEmpty(ctx, 200);
    },
  );
  return router;
}
