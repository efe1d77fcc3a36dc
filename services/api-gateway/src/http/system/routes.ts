import { createRouter, jsonBody, sendJson, type Router } from '@po/http';
import { bodyLimits, validateLogRequest, type LogRequest } from '@po/contracts';
import type { TokenBucketLimits } from '@po/domain';
import type { Deps } from '../../deps.js';
import { logsRateLimit } from '../../system/logs-rate-limit.js';
import { storeLog } from '../../system/logs.js';
import { versionInfo, type BuildInfo } from '../../system/version.js';

export function systemRoutes(deps: Deps, build: BuildInfo, maxBodyBytes: number, logsLimit: TokenBucketLimits): Router {
  const router = createRouter();
  router.get('/version', (ctx) => sendJson(ctx, 200, versionInfo(build)));
  // Anonymous: the body is read before anything is known about the caller, so it gets only the room
  // a log line needs, and the rate limit comes first, so a refused body is never read (decision 0083).
  router.post('/logs', logsRateLimit(logsLimit, deps.clock), jsonBody(validateLogRequest, Math.min(bodyLimits.log, maxBodyBytes)), async (ctx) => {
    sendJson(ctx, 200, await storeLog(deps, ctx.state.body as LogRequest));
  });
  return router;
}
