import type { DbOrTx } from '../db-types.js';

/** Current non-empty sensitive values of a pipeline, for redacting log messages (addendum §13). */
export async function sensitiveValues(db: DbOrTx, pipelineId: number): Promise<string[]> {
  const rows = await db.contextItem.findMany({
    where: { pipelineId: BigInt(pipelineId), isSensitive: true, NOT: { value: '' } },
    select: { value: true },
  });
  return rows.map((r) => r.value);
}

export interface ContextRow {
  key: string;
  value: string;
  valueType: string | null;
  isSensitive: boolean;
}

export async function liveContext(db: DbOrTx, pipelineId: number): Promise<ContextRow[]> {
  return db.contextItem.findMany({
    where: { pipelineId: BigInt(pipelineId) },
    orderBy: { id: 'asc' },
    select: { key: true, value: true, valueType: true, isSensitive: true },
  });
}

/** Writes the difference between two context lists: removed keys deleted, changed keys upserted. */
export async function writeContextChanges(tx: DbOrTx, pipelineId: number, before: readonly ContextRow[], after: readonly ContextRow[]): Promise<void> {
  const pid = BigInt(pipelineId);
  const old = new Map(before.map((c) => [c.key, c]));
  const keep = new Set(after.map((c) => c.key));
  const removed = before.filter((c) => !keep.has(c.key)).map((c) => c.key);
  if (removed.length > 0) await tx.contextItem.deleteMany({ where: { pipelineId: pid, key: { in: removed } } });
  for (const item of after) {
    const prev = old.get(item.key);
    if (prev && prev.value === item.value && prev.valueType === item.valueType && prev.isSensitive === item.isSensitive) continue;
    await tx.contextItem.upsert({
      where: { pipelineId_key: { pipelineId: pid, key: item.key } },
      create: { pipelineId: pid, ...item },
      update: { value: item.value, valueType: item.valueType, isSensitive: item.isSensitive },
    });
  }
}
