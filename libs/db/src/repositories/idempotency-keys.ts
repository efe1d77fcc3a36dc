import type { DbOrTx } from '../db-types.js';

export interface IdempotencyBinding {
  pipelineId: number;
  intentHash: string;
}

export async function findIdempotencyKey(db: DbOrTx, applicationId: number, key: string): Promise<IdempotencyBinding | null> {
  const row = await db.idempotencyKey.findUnique({ where: { applicationId_key: { applicationId, key } } });
  return row ? { pipelineId: Number(row.pipelineId), intentHash: row.intentHash } : null;
}

/** Throws a unique violation when another request bound the key first. */
export async function bindIdempotencyKey(
  tx: DbOrTx,
  input: { applicationId: number; key: string; pipelineId: number; intentHash: string },
): Promise<void> {
  await tx.idempotencyKey.create({ data: { ...input, pipelineId: BigInt(input.pipelineId) } });
}
