import type { DbOrTx } from '@po/db';

/**
 * Dispatch (addendum §9) outside a batch: what a republished message needs, and new executions
 * written directly (tests seed dispatched stages with it; the engine's passes write their own, in
 * store.ts's one statement).
 */

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
