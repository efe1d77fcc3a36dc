import { Forbidden, NotFound } from '@po/domain';
import { readPipeline, readPipelineByKey } from '@po/db';
import type { Deps } from '../deps.js';
import { pipelineResponse, type PipelineResponse } from './view.js';

/** GET /pipelines/{id}: 403 for another application's pipeline, as api-spec says for this route. */
export async function getPipeline(deps: Deps, applicationId: number, pipelineId: number): Promise<PipelineResponse> {
  const record = await readPipeline(deps.sql, pipelineId);
  if (!record) throw new NotFound(`Pipeline ${pipelineId} not found.`);
  if (record.applicationId !== applicationId) throw new Forbidden(`Pipeline ${pipelineId} belongs to another application.`);
  return pipelineResponse(record);
}

/** POST /pipelines/by-idempotency-key: the key is application-scoped, so another app sees 404. */
export async function getPipelineByIdempotencyKey(deps: Deps, applicationId: number, key: string): Promise<PipelineResponse> {
  const bound = await readPipelineByKey(deps.sql, applicationId, key);
  if (!bound) throw new NotFound('No pipeline for this application and idempotency key.');
  return pipelineResponse(bound.pipeline);
}
