import { statement, type Queryable } from '@po/db';

/** The context of the pipelines of an engine batch: read it, and write what results changed (decision 0061). */

const READ_CONTEXT = statement(
  'engine_read_context',
  `SELECT pipeline_id, key, value, value_type, is_sensitive FROM context_items
   WHERE pipeline_id = ANY($1::bigint[]) ORDER BY pipeline_id, id`,
  { plan: 'custom' },
);

export interface ContextEntryRow {
  key: string;
  value: string;
  valueType: string | null;
  isSensitive: boolean;
}

/** Live context of pipelines (results that change it or have log lines to redact). */
export async function readContexts(tx: Queryable, pipelineIds: readonly number[]): Promise<Map<number, ContextEntryRow[]>> {
  const rows = await tx.query<{ pipeline_id: string; key: string; value: string; value_type: string | null; is_sensitive: boolean }>(READ_CONTEXT, [pipelineIds]);
  const out = new Map<number, ContextEntryRow[]>(pipelineIds.map((id) => [id, []]));
  for (const r of rows) out.get(Number(r.pipeline_id))?.push({ key: r.key, value: r.value, valueType: r.value_type, isSensitive: r.is_sensitive });
  return out;
}

const DELETE_CONTEXT = statement(
  'engine_delete_context',
  `DELETE FROM context_items c USING unnest($1::bigint[], $2::text[]) AS d(pipeline_id, key)
   WHERE c.pipeline_id = d.pipeline_id AND c.key = d.key`,
  { plan: 'custom' },
);
// New keys are inserted in array order, so `id` keeps their order; an existing key keeps its row.
const UPSERT_CONTEXT = statement(
  'engine_upsert_context',
  `INSERT INTO context_items (pipeline_id, key, value, value_type, is_sensitive, updated_at)
   SELECT d.pipeline_id, d.key, d.value, d.value_type, d.is_sensitive, $6
   FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bool[]) WITH ORDINALITY AS d(pipeline_id, key, value, value_type, is_sensitive, n)
   ORDER BY d.n
   ON CONFLICT (pipeline_id, key) DO UPDATE
   SET value = EXCLUDED.value, value_type = EXCLUDED.value_type, is_sensitive = EXCLUDED.is_sensitive, updated_at = EXCLUDED.updated_at`,
  { plan: 'custom' },
);

/** Writes context changes of several pipelines: removed keys deleted, changed and new keys upserted. */
export async function writeContexts(
  tx: Queryable,
  changes: { pipelineId: number; removed: string[]; upserted: ContextEntryRow[] }[],
  now: Date,
): Promise<void> {
  const removed = changes.flatMap((c) => c.removed.map((key) => [c.pipelineId, key] as const));
  if (removed.length > 0) await tx.query(DELETE_CONTEXT, [removed.map((r) => r[0]), removed.map((r) => r[1])]);
  const upserted = changes.flatMap((c) => c.upserted.map((item) => ({ pipelineId: c.pipelineId, ...item })));
  if (upserted.length > 0) {
    await tx.query(UPSERT_CONTEXT, [
      upserted.map((u) => u.pipelineId),
      upserted.map((u) => u.key),
      upserted.map((u) => u.value),
      upserted.map((u) => u.valueType),
      upserted.map((u) => u.isSensitive),
      now,
    ]);
  }
}
