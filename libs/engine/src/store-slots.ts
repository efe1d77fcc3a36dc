import { statement, type Queryable } from '@po/db';

/** APP_MAX_ACTIVE_STAGES (addendum §7) inside an engine batch: free slots and who is owed them. */

const ACTIVE_STAGES = statement(
  'engine_active_stages',
  `SELECT count(*)::int AS n FROM stages WHERE application_id = $1 AND status IN ('Pending', 'Running')`,
);
const LOCK_APPLICATION = statement('engine_lock_application', 'SELECT pg_advisory_xact_lock(7301, $1)');

/**
 * Free slots of an application under APP_MAX_ACTIVE_STAGES. The advisory lock serialises the
 * passes of one application until commit, so two of them cannot both take the last slot.
 */
export async function freeSlots(tx: Queryable, applicationId: number, cap: number): Promise<number> {
  await tx.query(LOCK_APPLICATION, [applicationId]);
  const [row] = await tx.query<{ n: number }>(ACTIVE_STAGES, [applicationId]);
  return Math.max(0, cap - row!.n);
}

const OLDEST_THROTTLED = statement(
  'engine_oldest_throttled',
  `SELECT id, pipeline_id FROM stages WHERE application_id = $1 AND status = 'Throttled' ORDER BY id LIMIT $2`,
  { plan: 'custom' },
);

/** The application's oldest Throttled stages (addendum §7: a freed slot goes to the oldest first). */
export async function oldestThrottled(tx: Queryable, applicationId: number, limit: number): Promise<{ id: number; pipelineId: number }[]> {
  const rows = await tx.query<{ id: string; pipeline_id: string }>(OLDEST_THROTTLED, [applicationId, limit]);
  return rows.map((r) => ({ id: Number(r.id), pipelineId: Number(r.pipeline_id) }));
}
