import { ValidationFailed } from '@po/domain';
import {
  apiKeyAuth,
  bodyKeyAuth,
  createRouter,
  jsonBody,
  optionalJsonBody,
  pathParam,
  queryParams,
  sendJson,
  type ApiKeyResolver,
  type Router,
} from '@po/http';
import {
  bodyLimits,
  parseCreatedAfter,
  parseCreatedBefore,
  parseCursor,
  parseId,
  parseKeywordFilters,
  parseLimit,
  parseNamePrefix,
  parsePipelineStatuses,
  parseScheduleNameFilter,
  parseStageHandlerFilter,
  validateAppendStages,
  validateIdempotencyLookup,
  validateIdempotentCreate,
  validateLegacyCreate,
  validateRerunRequest,
  type AppendStagesRequest,
  type IdempotentPipelineCreateRequest,
  type LegacyPipelineCreateRequest,
  type PipelineIdempotencyLookupRequest,
  type RerunRequest,
} from '@po/contracts';
import type { Deps } from '../../deps.js';
import { createIdempotentPipeline, createLegacyPipeline } from '../../pipelines/create.js';
import { appendStages, cancelPipeline } from '../../pipelines/change.js';
import { getPipeline, getPipelineByIdempotencyKey, listStageLogsPage } from '../../pipelines/read.js';
import { rerunPipeline } from '../../pipelines/rerun.js';
import { listPipelinesPage, type PipelineListQuery } from '../../pipelines/search.js';

const acceptAny = (value: unknown) => ({ ok: true as const, value });


export function pipelineRoutes(
  deps: Deps,
  resolveKey: ApiKeyResolver,
  maxBodyBytes: number,
): Router {
  const router = createRouter();
  const auth = apiKeyAuth(resolveKey);
  const small = Math.min(bodyLimits.small, maxBodyBytes);
  const pipelineIdParam = pathParam('pipelineId', (raw) => parseId(raw, 'pipelineId'));
  const pipelineId = (ctx: { state: { params: Record<string, unknown> } }) =>
    ctx.state.params.pipelineId as number;

  // The key is in the body (addendum §2): read, then the key alone checked before the rest is parsed.
  router.post('/pipelines', bodyKeyAuth(resolveKey, 'apiKey', maxBodyBytes), async (ctx) => {
    const applicationId = ctx.state.applicationId!;
    const checked = validateLegacyCreate(ctx.state.body);
    if (!checked.ok) throw new ValidationFailed(checked.errors);
    sendJson(
      ctx,
      200,
      await createLegacyPipeline(deps, applicationId, checked.value as LegacyPipelineCreateRequest, ctx.state.traceId),
    );
  });

  // GET /pipelines (decision 0089): every parameter is checked, and every bad one reported, first.
  router.get(
    '/pipelines',
    auth,
    queryParams({
      status: parsePipelineStatuses,
      name: parseNamePrefix,
      keyword: parseKeywordFilters,
      scheduleName: parseScheduleNameFilter,
      createdAfter: parseCreatedAfter,
      createdBefore: parseCreatedBefore,
      stageHandlerName: parseStageHandlerFilter,
      cursor: parseCursor,
      limit: parseLimit,
    }),
    async (ctx) => {
      const query = ctx.state.params as unknown as PipelineListQuery;
      sendJson(ctx, 200, await listPipelinesPage(deps, ctx.state.applicationId!, query));
    },
  );

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
    jsonBody(validateIdempotencyLookup, small),
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

  router.get(
    '/pipelines/:pipelineId/stages/:stageId/logs',
    auth,
    pipelineIdParam,
    pathParam('stageId', (raw) => parseId(raw, 'stageId')),
    queryParams({ cursor: parseCursor, limit: parseLimit }),
    async (ctx) => {
      const { params } = ctx.state;
      const listing = { applicationId: ctx.state.applicationId!, pipelineId: pipelineId(ctx), stageId: params.stageId as number };
      sendJson(ctx, 200, await listStageLogsPage(deps, listing, { cursor: params.cursor as string | undefined, limit: params.limit as number }));
    },
  );

  router.post(
    '/pipelines/:pipelineId/cancel',
    auth,
    pipelineIdParam,
    optionalJsonBody(acceptAny, small),
    async (ctx) => {
      sendJson(ctx, 200, await cancelPipeline(deps, ctx.state.applicationId!, pipelineId(ctx)));
    },
  );

  router.post(
    '/pipelines/:pipelineId/rerun',
    auth,
    pipelineIdParam,
    optionalJsonBody(validateRerunRequest, small),
    async (ctx) => {
      const body = ctx.state.body as RerunRequest;
      sendJson(ctx, 201, await rerunPipeline(deps, ctx.state.applicationId!, pipelineId(ctx), body.from ?? 'start', ctx.state.traceId));
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
