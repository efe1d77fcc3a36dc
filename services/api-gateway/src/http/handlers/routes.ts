import { apiKeyAuth, createRouter, jsonBody, pathParam, sendJson, type ApiKeyResolver, type AppState, type Router } from '@po/http';
import { bodyLimits, parseHandlerName, validateHandlerSettings, type HandlerSettingsRequest } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { getHandler, listHandlersOf } from '../../handlers/read.js';
import { updateHandler } from '../../handlers/update.js';

/** Handlers of the application: read, pause and limit them (decision 0132). */
export function handlerRoutes(deps: Deps, resolveKey: ApiKeyResolver, maxBodyBytes: number): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const nameParam = pathParam('name', parseHandlerName);
  const name = (ctx: { state: AppState }) => ctx.state.params.name as string;
  const app = (ctx: { state: AppState }) => ctx.state.applicationId!;

  router.get('/handlers', auth, async (ctx) => {
    sendJson(ctx, 200, await listHandlersOf(deps, app(ctx)));
  });

  router.get('/handlers/:name', auth, nameParam, async (ctx) => {
    sendJson(ctx, 200, await getHandler(deps, app(ctx), name(ctx)));
  });

  router.put('/handlers/:name', auth, nameParam, jsonBody(validateHandlerSettings, Math.min(bodyLimits.small, maxBodyBytes)), async (ctx) => {
    sendJson(ctx, 200, await updateHandler(deps, app(ctx), name(ctx), ctx.state.body as HandlerSettingsRequest));
  });

  return router;
}
