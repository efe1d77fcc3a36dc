import type { Middleware } from 'koa';
import {
  apiKeyAuth,
  clientGone,
  createRouter,
  jsonBody,
  pathParam,
  sendJson,
  type ApiKeyResolver,
  type AppState,
  type Router,
} from '@po/http';
import {
  bodyLimits,
  parseId,
  validateLease,
  validateResultSubmit,
  type StageLeaseRequest,
  type StageResultSubmit,
} from '@po/contracts';
import type { Deliveries } from '../../deliveries/deliveries.js';
import { checkOwnQueue, pullNext } from '../../deliveries/operations.js';
import type { Deps } from '../../deps.js';
import { lease } from '../../leases/operations.js';
import { checkResultCredentials, type ResultCredentials } from '../../results/credentials.js';
import { ackAfterResult, stageOfResult, submitResult } from '../../results/submit.js';
import { deferredSession, type PendingSession } from '../../sessions/auth.js';

/** api-spec Limits: a result request body may be at most 327680 bytes. */
export const RESULT_MAX_BODY_BYTES = 327_680;

const rawStageId = (ctx: object): string =>
  (ctx as { params?: Record<string, string> }).params?.stageId ?? '';

export function stageRoutes(deps: Deps, deliveries: Deliveries, resolveKey: ApiKeyResolver): Router {
  const router = createRouter();
  const session = deferredSession(deps.db, deps.clock);
  const stageIdParam = pathParam('stageId', (raw) => parseId(raw, 'stageId'));
  const leaseBody = jsonBody(validateLease, Math.min(bodyLimits.small, deps.config.maxBodyBytes));
  const leaseState = (ctx: { state: { params: Record<string, unknown> } }) => ({
    stageId: ctx.state.params.stageId as number,
    session: (ctx.state as unknown as { session: PendingSession }).session,
  });
  // Key, session and their application are one read, before the path, the size and the body.
  const resultCaller: Middleware<AppState & { caller?: ResultCredentials }> = async (ctx, next) => {
    ctx.state.caller = await checkResultCredentials(deps, {
      applicationId: ctx.state.applicationId!,
      sessionToken: ctx.get('x-worker-session'),
      rawStageId: rawStageId(ctx),
    });
    await next();
  };

  for (const action of ['acquire', 'renew'] as const) {
    router.post(`/stages/:stageId/lease/${action}`, session, stageIdParam, leaseBody, async (ctx) => {
      const { stageId, session: s } = leaseState(ctx);
      sendJson(ctx, 200, await lease(deps, action, s, stageId, ctx.state.body as StageLeaseRequest));
    });
  }
  router.post(
    '/stages/:stageId/result',
    apiKeyAuth(resolveKey),
    resultCaller,
    stageIdParam,
    jsonBody(validateResultSubmit, RESULT_MAX_BODY_BYTES),
    async (ctx) => {
      const caller = (ctx.state as { caller?: ResultCredentials }).caller!;
      const body = ctx.state.body as StageResultSubmit;
      const stageId = ctx.state.params.stageId as number;
      // A pull the result carries is refused with the whole request, before the result is taken.
      if (body.next) checkOwnQueue(body.next.queue, caller.applicationId);
      const stage = await stageOfResult(deps, deliveries, caller, stageId, body);
      const accepted = await submitResult(deps, caller, stage, stageId, body);
      // Decision 0098: the ack the worker would send next, done here once the result is confirmed;
      // with the pull on the same queue in one broker call (decision 0110).
      const ack =
        body.ackToken === undefined
          ? undefined
          : await ackAfterResult(deps, deliveries, body.ackToken, body.next && { queue: body.next.queue, applicationId: caller.applicationId });
      // Decision 0100: and the pull it would send after that.
      const next = body.next
        ? { next: await pullNext(deps, deliveries, caller.applicationId, body.next, ctx.get('x-worker-session'), clientGone(ctx), ack?.taken) }
        : {};
      sendJson(ctx, 202, { ...accepted, ...(ack ? { acked: ack.acked } : {}), ...next });
    },
  );
  return router;
}
