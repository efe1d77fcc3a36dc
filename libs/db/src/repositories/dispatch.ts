import { derivePipelineStatus, isTerminalPipeline, type PipelineStatus, type StageStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';

/**
 * Persistence of the dispatcher. A pipeline needs a pass while `dispatch_requested_at` is set and
 * due; every change that may make a stage ready sets it in its own transaction (see
 * requestDispatch), so an event lost on the way only delays the pass until the sweep.
 */

/** Marks the pipeline as needing a dispatcher pass at `at` (the earliest request wins). */
export async function requestDispatch(tx: DbOrTx, pipelineId: number, at: Date): Promise<void> {
  await tx.$executeRaw`
    UPDATE pipelines SET dispatch_requested_at = LEAST(COALESCE(dispatch_requested_at, ${at}), ${at})
    WHERE id = ${BigInt(pipelineId)}`;
}

/**
 * New executions (attempt unassigned, no lease) and their stages Pending (addendum §9), as a
 * dispatcher pass leaves them; tests seed dispatched stages with it (the engine writes its own).
 */
export async function startExecutions(
  tx: DbOrTx,
  applicationId: number,
  executions: { stageId: number; executionId: string }[],
  now: Date,
): Promise<void> {
  if (executions.length === 0) return;
  await tx.stageExecution.createMany({
    data: executions.map((e) => ({ id: e.executionId, stageId: BigInt(e.stageId), applicationId, dispatchedAt: now })),
  });
  const stageIds = executions.map((e) => BigInt(e.stageId));
  const executionIds = executions.map((e) => e.executionId);
  await tx.$executeRaw`
    UPDATE stages SET status = 'Pending', current_execution_id = d.execution_id, next_retry_at = NULL
    FROM unnest(${stageIds}::bigint[], ${executionIds}::uuid[]) AS d(stage_id, execution_id)
    WHERE stages.id = d.stage_id`;
}

export async function liveContextForDispatch(tx: DbOrTx, pipelineId: number) {
  return tx.contextItem.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { id: 'asc' },
    select: { key: true, value: true, valueType: true, isSensitive: true },
  });
}

/** What a StageNextMessage needs for one stage, read at (re)publish time. */
export async function stageForMessage(db: DbOrTx, stageId: number) {
  return db.stage.findUnique({
    where: { id: BigInt(stageId) },
    select: {
      id: true, pipelineId: true, applicationId: true, name: true, handlerName: true, input: true,
      options: true, spanId: true, attempt: true, currentExecutionId: true, status: true,
      pipeline: { select: { traceId: true } },
    },
  });
}

/**
 * Re-derives the pipeline status after a stage change, in the same transaction (addendum §8), so
 * a reader never sees a stage change without its pipeline status. Caller holds the pipeline lock.
 */
export async function refreshPipelineStatus(
  tx: DbOrTx,
  pipelineId: number,
  now: Date,
  options: { requestDispatch: boolean },
): Promise<PipelineStatus> {
  const pid = BigInt(pipelineId);
  const rows = await tx.$queryRaw<{ status: PipelineStatus; dispatched: boolean; stage_statuses: StageStatus[] }[]>`
    SELECT p.status::text AS status, p.dispatched,
           ARRAY(SELECT s.status::text FROM stages s WHERE s.pipeline_id = p.id) AS stage_statuses
    FROM pipelines p WHERE p.id = ${pid}`;
  const pipeline = rows[0];
  if (!pipeline) throw new Error(`pipeline ${pipelineId} not found`);
  const status = derivePipelineStatus({ current: pipeline.status, dispatched: pipeline.dispatched, stageStatuses: pipeline.stage_statuses });
  const finishedAt = isTerminalPipeline(status) && status !== pipeline.status ? now : null;
  const dispatchAt = options.requestDispatch ? now : null;
  if (status !== pipeline.status || dispatchAt) {
    await tx.$executeRaw`
      UPDATE pipelines SET status = ${status}::"PipelineStatus",
        finished_at = COALESCE(${finishedAt}, finished_at),
        dispatch_requested_at = CASE WHEN ${dispatchAt}::timestamptz IS NULL THEN dispatch_requested_at
                                     ELSE LEAST(COALESCE(dispatch_requested_at, ${dispatchAt}), ${dispatchAt}) END
      WHERE id = ${pid}`;
  }
  return status;
}
