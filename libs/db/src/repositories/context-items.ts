import type { DbOrTx } from '../db-types.js';

/** Current non-empty sensitive values of a pipeline, for redacting log messages (addendum §13). */
export async function sensitiveValues(db: DbOrTx, pipelineId: number): Promise<string[]> {
  const rows = await db.contextItem.findMany({
    where: { pipelineId: BigInt(pipelineId), isSensitive: true, NOT: { value: '' } },
    select: { value: true },
  });
  return rows.map((r) => r.value);
}
