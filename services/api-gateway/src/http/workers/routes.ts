import { apiKeyAuth, createRouter, pathParam, queryParams, sendJson, type ApiKeyResolver, type AppState, type Router } from '@po/http';
import { parseCursor, parseLimit, parseWorkerId } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { listWorkerEventsPage, listWorkersPage } from '../../workers/read.js';


/** Worker activity for applications (X-API-Key): GET /workers and GET /workers/{workerId}/events. */
export function workerActivityRoutes(deps: Deps, resolveKey: ApiKeyResolver): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const paging = queryParams({ cursor: parseCursor, limit: parseLimit });
  const page = (ctx: { state: AppState }) => ({
    cursor: ctx.state.params.cursor as string | undefined,
    limit: ctx.state.params.limit as number,
  });

  router.get('/workers', auth, paging, async (ctx) => {
    sendJson(ctx, 200, await listWorkersPage(deps, ctx.state.applicationId!, page(ctx)));
  });

  router.get('/workers/:workerId/events', auth, pathParam('workerId', parseWorkerId), paging, async (ctx) => {
    const workerId = ctx.state.params.workerId as string;
    sendJson(ctx, 200, await listWorkerEventsPage(deps, ctx.state.applicationId!, workerId, page(ctx)));
  });

  return router;
}
