import { apiKeyAuth, createRouter, jsonBody, pathParam, sendEmpty, type ApiKeyResolver, type Router } from '@po/http';
import { bodyLimits, parseId, validateResume, type ResumeStageRequest } from '@po/contracts';
import type { Deps } from '../../deps.js';
import { resumeStage } from '../../stages/resume.js';

export function stageRoutes(deps: Deps, resolveKey: ApiKeyResolver, maxBodyBytes: number): Router {
  const router = createRouter();
  router.post(
    '/stages/:stageId/resume',
    apiKeyAuth(resolveKey),
    pathParam('stageId', (raw) => parseId(raw, 'stageId')),
    jsonBody(validateResume, Math.min(bodyLimits.small, maxBodyBytes)),
    async (ctx) => {
      const body = ctx.state.body as ResumeStageRequest;
      await resumeStage(deps, ctx.state.applicationId!, ctx.state.params.stageId as number, {
        approved: body.approved,
        ...(body.rejectionReason ? { rejectionReason: body.rejectionReason } : {}),
      });
      sendEmpty(ctx, 204);
    },
  );
  return router;
}
