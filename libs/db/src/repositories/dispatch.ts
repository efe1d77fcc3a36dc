import { derivePipelineStatus, isTerminalPipeline, type PipelineStatus, type StageOptions, type StageStatus } from '@po/domain';
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

export interface DispatchPipelineRow {
  id: number;
  applicationId: number;
  status: PipelineStatus;
  dispatched: boolean;
  traceId: string;
  /** When the pending pass was first requested (the ready moment, for the dispatch-latency metric). */
  dispatchRequestedAt: Date | null;
}

/** Locks the pipeline for a pass; with skipLocked, returns null when another pass holds it. */
export async function lockPipelineForDispatch(tx: DbOrTx, pipelineId: number, skipLocked: boolean): Promise<DispatchPipelineRow | null> {
  const rows = skipLocked
    ? await tx.$queryRaw<RawPipeline[]>`
        SELECT id, application_id, status::text AS status, dispatched, trace_id, dispatch_requested_at FROM pipelines
        WHERE id = ${BigInt(pipelineId)} FOR UPDATE SKIP LOCKED`
    : await tx.$queryRaw<RawPipeline[]>`
        SELECT id, application_id, status::text AS status, dispatched, trace_id, dispatch_requested_at FROM pipelines
        WHERE id = ${BigInt(pipelineId)} FOR UPDATE`;
  const r = rows[0];
  return r
    ? { id: Number(r.id), applicationId: r.application_id, status: r.status, dispatched: r.dispatched, traceId: r.trace_id, dispatchRequestedAt: r.dispatch_requested_at }
    : null;
}
interface RawPipeline {
  id: bigint;
  application_id: number;
  status: PipelineStatus;
  dispatched: boolean;
  trace_id: string;
  dispatch_requested_at: Date | null;
}

export interface DispatchStageRow {
  id: number;
  position: number;
  name: string;
  handlerName: string;
  status: StageStatus;
  options: StageOptions;
  input: string;
  spanId: string;
  attempt: number;
  nextRetryAt: Date | null;
}

export async function stagesForDispatch(tx: DbOrTx, pipelineId: number): Promise<DispatchStageRow[]> {
  const rows = await tx.stage.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { position: 'asc' },
    select: { id: true, position: true, name: true, handlerName: true, status: true, options: true, input: true, spanId: true, attempt: true, nextRetryAt: true },
  });
  return rows.map((r) => ({ ...r, id: Number(r.id), options: r.options as unknown as StageOptions }));
}

/** Pending + Running stages of an application (APP_MAX_ACTIVE_STAGES). */
export async function countActiveStages(tx: DbOrTx, applicationId: number): Promise<number> {
  return tx.stage.count({ where: { applicationId, status: { in: ['Pending', 'Running'] } } });
}

/** Serialises passes of one application while a cap applies, so two passes cannot both take the last slot. */
export async function lockApplicationSlots(tx: DbOrTx, applicationId: number): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(7301, ${applicationId})`;
}

export async function markStages(tx: DbOrTx, stageIds: number[], status: 'Skipped' | 'Throttled', now: Date): Promise<void> {
  if (stageIds.length === 0) return;
  await tx.stage.updateMany({
    where: { id: { in: stageIds.map(BigInt) } },
    data: status === 'Skipped' ? { status, finishedAt: now } : { status },
  });
}

/** New executions (attempt unassigned, no lease) and their stages Pending (addendum §9). */
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

/**
 * Ends a pass: status, first-pass flag, and the next time a pass is due (a future retry), if any.
 * `finishedAt` undefined leaves it as it is.
 */
export async function finishDispatchPass(
  tx: DbOrTx,
  pipelineId: number,
  update: { status: PipelineStatus; finishedAt?: Date | null; nextPassAt: Date | null },
): Promise<void> {
  await tx.pipeline.update({
    where: { id: BigInt(pipelineId) },
    data: {
      status: update.status,
      dispatched: true,
      dispatchRequestedAt: update.nextPassAt,
      ...(update.finishedAt === undefined ? {} : { finishedAt: update.finishedAt }),
    },
  });
}

export async function liveContextForDispatch(tx: DbOrTx, pipelineId: number) {
  return tx.contextItem.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { id: 'asc' },
    select: { key: true, value: true, valueType: true, isSensitive: true },
  });
}

export async function markPublished(db: DbOrTx, executionIds: string[], now: Date): Promise<void> {
  if (executionIds.length === 0) return;
  await db.stageExecution.updateMany({ where: { id: { in: executionIds } }, data: { publishedAt: now } });
}

/** Pipelines whose pass is due (requested before `dueBefore`), oldest request first. */
export async function pipelinesDueForDispatch(db: DbOrTx, dueBefore: Date, limit: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: bigint }[]>`
    SELECT id FROM pipelines
    WHERE dispatch_requested_at <= ${dueBefore} AND status NOT IN ('Completed', 'Failed', 'Cancelled')
    ORDER BY dispatch_requested_at LIMIT ${limit}`;
  return rows.map((r) => Number(r.id));
}

/** Pipelines holding Throttled stages, oldest stage first: candidates when slots free up. */
export async function pipelinesWithThrottledStages(db: DbOrTx, limit: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ pipeline_id: bigint }[]>`
    SELECT pipeline_id FROM stages WHERE status = 'Throttled'
    GROUP BY pipeline_id ORDER BY MIN(id) LIMIT ${limit}`;
  return rows.map((r) => Number(r.pipeline_id));
}

/** Live executions whose message was never confirmed published (publish failed after commit). */
export async function unpublishedExecutions(db: DbOrTx, dispatchedBefore: Date, limit: number) {
  const rows = await db.$queryRaw<{ id: string; stage_id: bigint }[]>`
    SELECT e.id, e.stage_id FROM stage_executions e JOIN stages s ON s.id = e.stage_id
    WHERE e.ended_at IS NULL AND e.published_at IS NULL AND e.dispatched_at < ${dispatchedBefore}
      AND s.status = 'Pending' AND s.current_execution_id = e.id
    ORDER BY e.dispatched_at LIMIT ${limit}`;
  return rows.map((r) => ({ executionId: r.id, stageId: Number(r.stage_id) }));
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
