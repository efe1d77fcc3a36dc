import { Unauthorized, ValidationFailed } from '@po/domain';
import {
  apiKeyAuth,
  createRouter,
  hashSecret,
  jsonBody,
  optionalJsonBody,
  pathParam,
  sendJson,
  type ApiKeyResolver,
  type Router,
} from '@po/http';
import {
  parseId,
  validateAppendStages,
  validateIdempotencyLookup,
  validateIdempotentCreate,
  validateLegacyCreate,
  type AppendStagesRequest,
  type IdempotentPipelineCreateRequest,
  type LegacyPipelineCreateRequest,
  type PipelineIdempotencyLookupRequest,
} from '@po/contracts';
import type { Deps } from '../../deps.js';
import { createIdempotentPipeline, createLegacyPipeline } from '../../pipelines/create.js';
import { appendStages, cancelPipeline } from '../../pipelines/change.js';
import { getPipeline, getPipelineByIdempotencyKey } from '../../pipelines/read.js';

/**
 * Legacy creation reads its key from the body: the body is read first (413, malformed JSON), then
 * the key is checked (400 /apiKey, 401) before the rest of the body is validated (addendum §2).
 */
function legacyBodyKey(resolve: ApiKeyResolver): (data: unknown) => Promise<number> {
  return async (data) => {
    const apiKey =
      data !== null && typeof data === 'object' && !Array.isArray(data)
        ? (data as { apiKey?: unknown }).apiKey
        : undefined;
    if (typeof apiKey !== 'string') {
      throw ValidationFailed.at(
        data !== null && typeof data === 'object' && !Array.isArray(data) ? '/apiKey' : '',
        apiKey === undefined || apiKey === null ? 'is required' : 'must be a string',
      );
    }
    const key = await resolve(hashSecret(apiKey));
    if (!key) throw new Unauthorized('Invalid API key in the body.');
    return key.applicationId;
  };
}

const acceptAny = (value: unknown) => ({ ok: true as const, value });

export function pipelineRoutes(
  deps: Deps,
  resolveKey: ApiKeyResolver,
  maxBodyBytes: number,
): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const legacyKey = legacyBodyKey(resolveKey);
  const pipelineIdParam = pathParam('pipelineId', (raw) => parseId(raw, 'pipelineId'));
  const pipelineId = (ctx: { state: { params: Record<string, unknown> } }) =>
    ctx.state.params.pipelineId as number;

  router.post('/pipelines', jsonBody(acceptAny, maxBodyBytes), async (ctx) => {
    const applicationId = await legacyKey(ctx.state.body);
    ctx.state.applicationId = applicationId;
    const checked = validateLegacyCreate(ctx.state.body);
    if (!checked.ok) throw new ValidationFailed(checked.errors);
    sendJson(
      ctx,
      200,
      await createLegacyPipeline(deps, applicationId, checked.value as LegacyPipelineCreateRequest, ctx.state.traceId),
    );
  });

  router.post(
    '/pipelines/idempotent',
    auth,
    jsonBody(validateIdempotentCreate, maxBodyBytes),
    async (ctx) => {
      const body = ctx.state.body as IdempotentPipelineCreateRequest;
      const outcome = await createIdempotentPipeline(deps, ctx.state.applicationId!, body, ctx.state.traceId);
      sendJson(ctx, outcome.created ? 201 : 200, outcome);
    },
  );

  router.post(
    '/pipelines/by-idempotency-key',
    auth,
    jsonBody(validateIdempotencyLookup, maxBodyBytes),
    async (ctx) => {
      const body = ctx.state.body as PipelineIdempotencyLookupRequest;
      sendJson(
        ctx,
        200,
        await getPipelineByIdempotencyKey(deps, ctx.state.applicationId!, body.idempotencyKey),
      );
    },
  );

  router.get('/pipelines/:pipelineId', auth, pipelineIdParam, async (ctx) => {
    sendJson(ctx, 200, await getPipeline(deps, ctx.state.applicationId!, pipelineId(ctx)));
  });

  router.post(
    '/pipelines/:pipelineId/cancel',
    auth,
    pipelineIdParam,
    optionalJsonBody(acceptAny, maxBodyBytes),
    async (ctx) => {
      sendJson(ctx, 200, await cancelPipeline(deps, ctx.state.applicationId!, pipelineId(ctx)));
    },
  );

  router.post(
    '/pipelines/:pipelineId/stages',
    auth,
    pipelineIdParam,
    jsonBody(validateAppendStages, maxBodyBytes),
    async (ctx) => {
      const body = ctx.state.body as AppendStagesRequest;
      const stages = await appendStages(
        deps,
        ctx.state.applicationId!,
        pipelineId(ctx),
        body.stages,
      );
      sendJson(ctx, 200, { stages });
    },
  );

  return router;
}
