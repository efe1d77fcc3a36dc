import type { DbOrTx } from '@po/db';

/**
 * Dispatch (addendum §9) outside a batch: new executions written directly (tests seed dispatched
 * stages with it; the engine's passes write their own, in store.ts's one statement). A lost
 * message is republished from its row by republish.ts.
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
