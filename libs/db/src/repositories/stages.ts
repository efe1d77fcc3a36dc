import type { DbOrTx } from '../db-types.js';

export async function stageNamesOf(tx: DbOrTx, pipelineId: number): Promise<string[]> {
  const rows = await tx.stage.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { position: 'asc' },
    select: { name: true },
  });
  return rows.map((r) => r.name);
}
