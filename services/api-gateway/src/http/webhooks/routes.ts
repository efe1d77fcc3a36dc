import {
  apiKeyAuth,
  createRouter,
  jsonBody,
  optionalJsonBody,
  pathParam,
  queryParams,
  sendJson,
  type ApiKeyResolver,
  type AppState,
  type Router,
} from '@po/http';
import {
  bodyLimits,
  parseCursor,
  parseLimit,
  parseWebhookDeliveryId,
  parseWebhookName,
  validateWebhookRequest,
  type WebhookRequest,
} from '@po/contracts';
import type { Deps } from '../../deps.js';
import {
  deliveriesOf,
  getWebhook,
  listWebhooksOf,
  putWebhook,
  removeWebhook,
  retryDelivery,
} from '../../webhooks/webhooks.js';

/** Signed webhooks and their delivery log (decision 0134). */
export function webhookRoutes(
  deps: Deps,
  resolveKey: ApiKeyResolver,
  maxBodyBytes: number,
): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const limit = Math.min(bodyLimits.small, maxBodyBytes);
  const nameParam = pathParam('name', parseWebhookName);
  const idParam = pathParam('id', parseWebhookDeliveryId);
  const name = (ctx: { state: AppState }) => ctx.state.params.name as string;
  const app = (ctx: { state: AppState }) => ctx.state.applicationId!;

  router.get('/webhooks', auth, async (ctx) => {
    sendJson(ctx, 200, await listWebhooksOf(deps, app(ctx)));
  });

  router.get('/webhooks/:name', auth, nameParam, async (ctx) => {
    sendJson(ctx, 200, await getWebhook(deps, app(ctx), name(ctx)));
  });

  router.put(
    '/webhooks/:name',
    auth,
    nameParam,
    jsonBody(validateWebhookRequest, limit),
    async (ctx) => {
      const r = await putWebhook(deps, app(ctx), name(ctx), ctx.state.body as WebhookRequest);
      sendJson(ctx, r.created ? 201 : 200, r.view);
    },
  );

  router.delete('/webhooks/:name', auth, nameParam, async (ctx) => {
    await removeWebhook(deps, app(ctx), name(ctx));
    ctx.status = 204;
  });

  router.get(
    '/webhooks/:name/deliveries',
    auth,
    nameParam,
    queryParams({ cursor: parseCursor, limit: parseLimit }),
    async (ctx) => {
      const page = {
        limit: ctx.state.params.limit as number,
        cursor: ctx.state.params.cursor as string | undefined,
      };
      sendJson(ctx, 200, await deliveriesOf(deps, app(ctx), name(ctx), page));
    },
  );

  router.post(
    '/webhooks/:name/deliveries/:id/retry',
    auth,
    nameParam,
    idParam,
    optionalJsonBody((v) => ({ ok: true as const, value: v }), limit),
    async (ctx) => {
      sendJson(
        ctx,
        202,
        await retryDelivery(deps, app(ctx), name(ctx), ctx.state.params.id as string),
      );
    },
  );

  return router;
}
