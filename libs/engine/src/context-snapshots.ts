import { createHash } from 'node:crypto';
import { statement, type Queryable } from '@po/db';
import type { ContextItem } from '@po/contracts';

/**
 * A pipeline context larger than this (in bytes of keys, values and types) is not copied into each
 * StageNext message: it is written once as a snapshot that the messages name, and the
 * worker-gateway puts it back at delivery (decision 0121). Below it, copying is cheaper than a read
 * per delivery, and nearly every pipeline's context is far below it.
 */
export const INLINE_CONTEXT_MAX_BYTES = 16 * 1024;

/** About the bytes a context adds to a serialised message (its strings, plus a constant per item). */
export function contextBytes(items: readonly { key: string; value: string | null; valueType: string | null }[]): number {
  let bytes = 0;
  for (const c of items) bytes += 64 + Buffer.byteLength(c.key) + Buffer.byteLength(c.value ?? '') + Buffer.byteLength(c.valueType ?? '');
  return bytes;
}

export interface ContextSnapshot {
  id: string;
  pipelineId: number;
  applicationId: number;
  /** The ContextItem array as JSON: real values, what the pulled payload carries. */
  items: string;
}

/**
 * The snapshot of a pipeline's context as dispatched now. Its id is derived from the pipeline and
 * the content, so a dispatch with an unchanged context names the snapshot already written.
 */
export function snapshotOf(pipelineId: number, applicationId: number, items: readonly ContextItem[]): ContextSnapshot {
  const json = JSON.stringify(items);
  const h = createHash('sha256').update(`${pipelineId}\n`).update(json).digest('hex');
  const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
  return { id, pipelineId, applicationId, items: json };
}

const WRITE_SNAPSHOTS = statement(
  'engine_write_context_snapshots',
  `INSERT INTO context_snapshots (id, pipeline_id, application_id, items, bytes)
   SELECT d.id, d.pipeline_id, d.application_id, d.items, octet_length(d.items)
   FROM unnest($1::uuid[], $2::bigint[], $3::int[], $4::text[]) AS d(id, pipeline_id, application_id, items)
   ON CONFLICT (id) DO NOTHING`,
  { plan: 'custom' },
);

/** Writes the snapshots (in the dispatch's transaction, so a message never names a missing one). */
export async function writeSnapshots(tx: Queryable, snapshots: readonly ContextSnapshot[]): Promise<void> {
  if (snapshots.length === 0) return;
  await tx.query(WRITE_SNAPSHOTS, [snapshots.map((s) => s.id), snapshots.map((s) => s.pipelineId), snapshots.map((s) => s.applicationId), snapshots.map((s) => s.items)]);
}
