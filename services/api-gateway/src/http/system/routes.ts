import { createRouter, jsonBody, sendJson, type Router } from '@po/http';
import { validateLogRequest, type LogRequest } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { storeLog } from '../../system/logs.js';
import { versionInfo, type BuildInfo } from '../../system/version.js';

export function systemRoutes(deps: Deps, build: BuildInfo, maxBodyBytes: number): Router {
  const router = createRouter();
  router.get('/version', (ctx) => sendJson(ctx, 200, versionInfo(build)));
  router.post('/logs', jsonBody(validateLogRequest, maxBodyBytes), async (ctx) => {
    sendJson(ctx, 200, await storeLog(deps, ctx.state.body as LogRequest));
  });
  return router;
}
