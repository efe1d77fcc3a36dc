import type { StageLogPage } from '@po/contracts';
import { Forbidden, NotFound } from '@po/domain';
import { readPipeline, readPipelineByKey, readStageLogPage } from '@po/db';
import { listingOf, readCursor } from '@po/http';
import type { Deps } from '../deps.js';
import { pipelineResponse, stageLog, type PipelineResponse } from './view.js';

/** The logs of one stage of one pipeline of one application. */
export interface LogListing {
  applicationId: number;
  pipelineId: number;
  stageId: number;
}

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

/**
 * GET /pipelines/{pipelineId}/stages/{stageId}/logs: every log of the stage, by created then id,
 * a page at a time (decision 0084). A stage outside the application's pipeline is a 404 (a new
 * route, so it answers like the other application-scoped reads and says nothing about other
 * applications). The cursor names the last log, `[created ms, id]` (a log's created may precede
 * 1970: a worker's own time), signed for (application, pipeline, stage) (decision 0089). Its
 * structure is checked first (400), its origin after existence; the page read with the position
 * it claims is only used once the cursor proved to be this listing's.
 */
export async function listStageLogsPage(
  deps: Deps,
  listing: LogListing,
  query: { cursor: string | undefined; limit: number },
): Promise<StageLogPage> {
  const token = readCursor(query.cursor, ['time', 'id']);
  const cursors = await deps.cursors();
  const claimed = token && { created: new Date(token.position[0] as number), id: token.position[1] as number };
  const page = await readStageLogPage(deps.sql, listing, { ...(claimed ? { after: claimed } : {}), limit: query.limit });
  if (!page) throw new NotFound(`Stage ${listing.stageId} of pipeline ${listing.pipelineId} not found.`);
  const key = listingOf('stage-logs', { ...listing });
  cursors.verifyOptional(key, token);
  const last = page.logs[page.logs.length - 1];
  return {
    items: page.logs.map(stageLog),
    nextCursor: page.more && last ? cursors.issue(key, [last.created.getTime(), last.id]) : null,
  };
}
