import { stageStatusesAllowing, type StageStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';

/** The stages a cancel moves (addendum §7: every non-terminal one). */
const UNFINISHED = stageStatusesAllowing('cancel');

/** Cancels every unfinished stage of a pipeline and ends their executions (addendum §6). */
export async function cancelUnfinishedStages(tx: DbOrTx, pipelineId: number, now: Date): Promise<void> {
  const pid = BigInt(pipelineId);
  // Lock order everywhere: pipeline, then stage, then execution (lease and result paths agree).
  await tx.stage.updateMany({
    where: { pipelineId: pid, status: { in: UNFINISHED } },
    // A cancelled retry will not happen: nextRetryAt applies only while RetryScheduled (addendum §4).
    data: { status: 'Cancelled', finishedAt: now, nextRetryAt: null },
  });
  await tx.stageExecution.updateMany({
    where: { endedAt: null, stage: { pipelineId: pid } },
    data: { endedAt: now, endReason: 'cancelled' },
  });
}

export async function stageNamesOf(tx: DbOrTx, pipelineId: number): Promise<string[]> {
  const rows = await tx.stage.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { position: 'asc' },
    select: { name: true },
  });
  return rows.map((r) => r.name);
}

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
  await tx.stage.update({
    where: { id: BigInt(stage.id) },
    data: approved
      ? { status: 'Completed', finishedAt: now, approved, decidedAt: now }
      : {
          status: 'Failed',
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
