import { derivePipelineStatus, isTerminalPipeline, resumeEvent, stageStatusAfter, type PipelineStatus, type StageStatus } from '@po/domain';
import type { DbOrTx } from '@po/db';

/**
 * Resume (addendum §7, §13): the approval decision on a WaitingForApproval stage, the pipeline's
 * status derived again in the same transaction and its next pass requested. Lock order as
 * everywhere: pipeline, then stage.
 */

export interface LockedStage {
  id: number;
  pipelineId: number;
  applicationId: number;
  status: StageStatus;
  approved: boolean | null;
  failureCount: number;
}

/** The pipeline of a stage, read without a lock: callers lock the pipeline before the stage. */
export async function pipelineOfStage(tx: DbOrTx, stageId: number): Promise<number | null> {
  const row = await tx.stage.findUnique({ where: { id: BigInt(stageId) }, select: { pipelineId: true } });
  return row ? Number(row.pipelineId) : null;
}

export async function lockStage(tx: DbOrTx, stageId: number): Promise<LockedStage | null> {
  const rows = await tx.$queryRaw<
    { id: bigint; pipeline_id: bigint; application_id: number; status: StageStatus; approved: boolean | null; failure_count: number }[]
  >`SELECT id, pipeline_id, application_id, status::text AS status, approved, failure_count
      FROM stages WHERE id = ${BigInt(stageId)} FOR UPDATE`;
  const r = rows[0];
  return r
    ? {
        id: Number(r.id),
        pipelineId: Number(r.pipeline_id),
        applicationId: r.application_id,
        status: r.status,
        approved: r.approved,
        failureCount: r.failure_count,
      }
    : null;
}

/** Records an approval decision on a WaitingForApproval stage (addendum §7, §13). */
export async function recordApprovalDecision(
  tx: DbOrTx,
  stage: LockedStage,
  decision: { approved: boolean; rejectionReason: string | null; now: Date; rejectionLog: string | null },
): Promise<void> {
  const { approved, rejectionReason, now } = decision;
  const status = stageStatusAfter(stage.status, resumeEvent(approved));
  await tx.stage.update({
    where: { id: BigInt(stage.id) },
    data: approved
      ? { status, finishedAt: now, approved, decidedAt: now }
      : {
          status,
          finishedAt: now,
          approved,
          rejectionReason,
          decidedAt: now,
          lastErrorCode: 'REJECTED',
          failureDisposition: 'terminal',
          failureCount: { increment: 1 },
          lastFailedAt: now,
        },
  });
  if (decision.rejectionLog !== null) {
    await tx.stageLog.create({
      data: {
        stageId: BigInt(stage.id),
        pipelineId: BigInt(stage.pipelineId),
        message: decision.rejectionLog,
        logLevel: 'Warning',
        created: now,
      },
    });
  }
}

/** Marks the pipeline as needing a dispatcher pass at `at` (the earliest request wins). */
export async function requestDispatch(tx: DbOrTx, pipelineId: number, at: Date): Promise<void> {
  await tx.$executeRaw`
    UPDATE pipelines SET dispatch_requested_at = LEAST(COALESCE(dispatch_requested_at, ${at}), ${at})
    WHERE id = ${BigInt(pipelineId)}`;
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
