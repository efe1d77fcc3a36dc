import { apiKeyAuth, createRouter, jsonBody, optionalJsonBody, pathParam, sendJson, type ApiKeyResolver, type AppState, type Router } from '@po/http';
import { bodyLimits, parseId, validateBulkCancel, validateBulkRerun, type ValidBulkRequest } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { cancelOperation, getOperation, startBulk } from '../../operations/bulk.js';

/** Bulk rerun and cancel, and the operations they start (decision 0133). */
export function operationRoutes(deps: Deps, resolveKey: ApiKeyResolver, maxBodyBytes: number): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const limit = Math.min(bodyLimits.small, maxBodyBytes);
  // An operation id has a pipeline id's form; its errors name `id`.
  const idParam = pathParam('id', (raw) => {
    const r = parseId(raw, 'pipelineId');
    return r.ok ? r : { ok: false as const, errors: r.errors.map((e) => ({ ...e, field: 'id' })) };
  });
  const id = (ctx: { state: AppState }) => ctx.state.params.id as number;
  const app = (ctx: { state: AppState }) => ctx.state.applicationId!;

  for (const [path, kind, validate] of [
    ['/pipelines/bulk-rerun', 'rerun', validateBulkRerun],
    ['/pipelines/bulk-cancel', 'cancel', validateBulkCancel],
  ] as const) {
    router.post(path, auth, jsonBody(validate, limit), async (ctx) => {
      const started = await startBulk(deps, app(ctx), kind, ctx.state.body as ValidBulkRequest);
      if ('dryRun' in started) sendJson(ctx, 200, started.dryRun);
      else sendJson(ctx, 202, started.operation);
    });
  }

  router.get('/operations/:id', auth, idParam, async (ctx) => {
    sendJson(ctx, 200, await getOperation(deps, app(ctx), id(ctx)));
  });

  router.post('/operations/:id/cancel', auth, idParam, optionalJsonBody((v) => ({ ok: true as const, value: v }), limit), async (ctx) => {
    sendJson(ctx, 200, await cancelOperation(deps, app(ctx), id(ctx)));
  });

  return router;
}
