import type { Middleware } from 'koa';
import { ValidationFailed, type FieldError } from '@po/domain';
import { apiKeyAuth, createRouter, pathParam, sendJson, type ApiKeyResolver, type AppState, type Router } from '@po/http';
import { parseCursor, parseLimit, parseWorkerId, type QueryValue, type Validation } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { listWorkerEventsPage, listWorkersPage } from '../../workers/read.js';

/** Validates query parameters into ctx.state.params, reporting every bad one (400, bare names). */
function queryParams(parsers: Record<string, (raw: QueryValue) => Validation<unknown>>): Middleware<AppState> {
  return async (ctx, next) => {
    const errors: FieldError[] = [];
    for (const [name, parse] of Object.entries(parsers)) {
      const result = parse(ctx.query[name]);
      if (result.ok) ctx.state.params[name] = result.value;
      else errors.push(...result.errors);
    }
    if (errors.length > 0) throw new ValidationFailed(errors);
    await next();
  };
}

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
