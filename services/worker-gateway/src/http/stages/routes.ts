import {
  apiKeyAuth,
  createRouter,
  jsonBody,
  pathParam,
  sendJson,
  type ApiKeyResolver,
  type Router,
} from '@po/http';
import {
  parseId,
  validateLease,
  validateResultSubmit,
  type StageLeaseRequest,
  type StageResultSubmit,
} from '@po/contracts';
import type { Deps } from '../../deps.js';
import { lease } from '../../leases/operations.js';
import { submitResult } from '../../results/submit.js';
import { deferredSession, type PendingSession } from '../../sessions/auth.js';

/** api-spec Limits: a result request body may be at most 327680 bytes. */
export const RESULT_MAX_BODY_BYTES = 327_680;

export function stageRoutes(deps: Deps, resolveKey: ApiKeyResolver): Router {
  const router = createRouter();
  const session = deferredSession(deps.db, deps.clock);
  const stageIdParam = pathParam('stageId', (raw) => parseId(raw, 'stageId'));
  const leaseBody = jsonBody(validateLease, deps.config.maxBodyBytes);
  const stateOf = (ctx: { state: { params: Record<string, unknown> } }) => ({
    stageId: ctx.state.params.stageId as number,
    session: (ctx.state as unknown as { session: PendingSession }).session,
  });

  router.post('/stages/:stageId/lease/acquire', session, stageIdParam, leaseBody, async (ctx) => {
    const { stageId, session: s } = stateOf(ctx);
    sendJson(ctx, 200, await lease(deps, 'acquire', s, stageId, ctx.state.body as StageLeaseRequest));
  });
  router.post('/stages/:stageId/lease/renew', session, stageIdParam, leaseBody, async (ctx) => {
    const { stageId, session: s } = stateOf(ctx);
    sendJson(ctx, 200, await lease(deps, 'renew', s, stageId, ctx.state.body as StageLeaseRequest));
  });
  router.post(
    '/stages/:stageId/result',
    apiKeyAuth(resolveKey),
    session,
    stageIdParam,
    jsonBody(validateResultSubmit, RESULT_MAX_BODY_BYTES),
    async (ctx) => {
      const { stageId, session: s } = stateOf(ctx);
      sendJson(ctx, 202, await submitResult(deps, { applicationId: ctx.state.applicationId!, session: s }, stageId, ctx.state.body as StageResultSubmit));
    },
  );
  return router;
}
