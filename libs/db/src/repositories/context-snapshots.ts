import { statement, type Queryable } from '../sql.js';

const READ_SNAPSHOT = statement(
  'context_snapshot_read',
  `SELECT items FROM context_snapshots WHERE id = $1::uuid AND application_id = $2`,
);

/**
 * A context snapshot's items as JSON (decision 0121), when it exists for this application; the
 * engine writes them, the worker-gateway reads them back into a pulled payload.
 */
export async function readContextSnapshot(db: Queryable, id: string, applicationId: number): Promise<string | null> {
  const [row] = await db.query<{ items: string }>(READ_SNAPSHOT, [id, applicationId]);
  return row?.items ?? null;
}
