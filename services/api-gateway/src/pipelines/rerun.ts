import { newTraceId } from '@po/domain';
import type { RerunFrom } from '@po/db';
import { rerunPipeline as rerunInTransaction } from '@po/engine';
import type { Deps } from '../deps.js';
import { dispatchCreated } from './create.js';
import { pipelineResponse, type PipelineResponse } from './view.js';

/**
 * POST /pipelines/{pipelineId}/rerun (decisions 0089, 0133): a new pipeline from a terminal one,
 * from its first stage or from its failure (`@po/engine` rerunPipeline says what each repeats),
 * dispatched after commit like any creation. It gets the request's trace id (a new run is a new
 * trace), no idempotency key and no schedule, and `rerun_of` = the original, which is locked
 * against deletion (retention) until the rerun commits.
 */
export async function rerunPipeline(
  deps: Deps,
  applicationId: number,
  pipelineId: number,
  from: RerunFrom,
  requestTraceId?: string,
): Promise<PipelineResponse> {
  const started = Date.now();
  const { pipeline, record } = await deps.sql.transaction((tx) =>
    rerunInTransaction(tx, { applicationId, pipelineId, from, traceId: requestTraceId ?? newTraceId(), now: deps.clock() }),
  );
  await dispatchCreated(deps, pipeline, record.id, started);
  return pipelineResponse(record);
}
