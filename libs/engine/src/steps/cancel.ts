import { isTerminalPipeline, stageStatusesAllowing } from '@po/domain';
import { lockPipeline, type DbOrTx } from '@po/db';

/**
 * Cancel (addendum §6): every unfinished stage of a pipeline Cancelled, their executions ended, the
 * pipeline Cancelled. The caller holds the pipeline's lock.
 */

const UNFINISHED = stageStatusesAllowing('cancel');

async function cancelUnfinishedStages(tx: DbOrTx, pipelineId: number, now: Date): Promise<void> {
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

async function markPipelineCancelled(tx: DbOrTx, pipelineId: number, now: Date): Promise<void> {
  await tx.pipeline.update({ where: { id: BigInt(pipelineId) }, data: { status: 'Cancelled', finishedAt: now } });
}

/**
 * Cancels a pipeline inside the caller's transaction exactly as POST cancel does: the pipeline
 * row is locked, its unfinished stages and open executions end, and it becomes Cancelled.
 * Returns false when it was already terminal (nothing changed).
 */
export async function cancelPipeline(tx: DbOrTx, pipelineId: number, now: Date): Promise<boolean> {
  const pipeline = await lockPipeline(tx, pipelineId);
  if (!pipeline || isTerminalPipeline(pipeline.status)) return false;
  await cancelLockedPipeline(tx, pipelineId, now);
  return true;
}

/** Cancels a pipeline whose lock the caller holds and that it found not terminal (POST cancel). */
export async function cancelLockedPipeline(tx: DbOrTx, pipelineId: number, now: Date): Promise<void> {
  await cancelUnfinishedStages(tx, pipelineId, now);
  await markPipelineCancelled(tx, pipelineId, now);
}
