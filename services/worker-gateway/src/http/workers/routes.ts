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
  bodyLimits,
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
import { authenticateSession } from '../../sessions/auth.js';
import { bootstrap, heartbeat, recordEvents, shutdown } from '../../sessions/operations.js';

/** A missing X-Worker-Session is a 401 before the body; matching it to workerId needs the body. */
const sessionHeader: Middleware<AppState> = async (ctx, next) => {
  if (!ctx.get('x-worker-session')) throw new Unauthorized('Missing X-Worker-Session header.');
  await next();
};

export function workerRoutes(deps: Deps, resolveKey: ApiKeyResolver): Router {
  // An events batch may be megabytes: a caller without a live session must not get it parsed.
  const liveSession: Middleware<AppState> = async (ctx, next) => {
    await authenticateSession(deps.db, ctx.get('x-worker-session'), { now: deps.clock(), checkExpiry: true });
    await next();
  };
  const router = createRouter();
  // Heartbeat, events and shutdown read the body before the session is matched (addendum §3): each gets only the room its fields need.
  const cap = (limit: number) => Math.min(limit, deps.config.maxBodyBytes);
  router.post(
    '/workers/bootstrap',
    apiKeyAuth(resolveKey),
    jsonBody(validateBootstrap, cap(bodyLimits.workerBootstrap)),
    async (ctx) => {
      sendJson(
        ctx,
        200,
        await bootstrap(
          deps,
          { applicationId: ctx.state.applicationId!, keyId: ctx.state.apiKeyId! },
          ctx.state.body as BootstrapRequest,
        ),
      );
    },
  );
  router.post(
    '/workers/heartbeat',
    sessionHeader,
    jsonBody(validateHeartbeat, cap(bodyLimits.small)),
    async (ctx) => {
      await heartbeat(deps, ctx.get('x-worker-session'), ctx.state.body as HeartbeatRequest);
      sendEmpty(ctx, 200);
    },
  );
  router.post(
    '/workers/events',
    sessionHeader,
    liveSession,
    jsonBody(
      eventsRequestValidator(deps.config.eventsMaxBatch),
      cap(bodyLimits.workerEvents(deps.config.eventsMaxBatch)),
    ),
    async (ctx) => {
      await recordEvents(deps, ctx.get('x-worker-session'), ctx.state.body as WorkerEventsRequest);
      sendEmpty(ctx, 200);
    },
  );
  router.post(
    '/workers/shutdown',
    sessionHeader,
    jsonBody(validateShutdown, cap(bodyLimits.small)),
    async (ctx) => {
      await shutdown(deps, ctx.get('x-worker-session'), ctx.state.body as ShutdownRequest);
      sendEmpty(ctx, 200);
    },
  );
  return router;
}
