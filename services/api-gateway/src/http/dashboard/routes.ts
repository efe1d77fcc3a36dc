import { apiKeyAuth, createRouter, queryParams, sendJson, type ApiKeyResolver, type Router } from '@po/http';
import { parseCursor, parseLimit } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { listFleetEventsPage } from '../../dashboard/fleet-events.js';
import { readOverview } from '../../dashboard/overview.js';

/**
 * What the dashboard reads besides the spec's resources (X-API-Key; decision 0093): GET /overview
 * and GET /worker-events (not /workers/events: the Ingress sends that path to the worker-gateway).
 */
export function dashboardApiRoutes(deps: Deps, resolveKey: ApiKeyResolver): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);

  router.get('/overview', auth, async (ctx) => {
    sendJson(ctx, 200, await readOverview(deps, ctx.state.applicationId!));
  });

  router.get('/worker-events', auth, queryParams({ cursor: parseCursor, limit: parseLimit }), async (ctx) => {
    const page = { cursor: ctx.state.params.cursor as string | undefined, limit: ctx.state.params.limit as number };
    sendJson(ctx, 200, await listFleetEventsPage(deps, ctx.state.applicationId!, page));
  });

  return router;
}
