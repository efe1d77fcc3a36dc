import type { DbOrTx } from '../db-types.js';

/** Worker and session counts for the metrics gauges (read on scrape). */
export interface WorkerCounts {
  active: number;
  healthy: number;
  sessions: number;
  /** Healthy workers by (application, handler): the StageNext queue they serve. */
  healthyByHandler: { applicationId: number; handler: string; workers: number }[];
}

/**
 * Counts for GET /metrics: workers with status Active, those of them seen since `healthySince`
 * (last heartbeat, or bootstrap when none yet), current unexpired sessions, and healthy workers per
 * application and handler. Aggregates only: no worker ids leave this function.
 */
export async function workerCounts(db: DbOrTx, now: Date, healthySince: Date): Promise<WorkerCounts> {
  const [totals, sessions, byHandler] = await Promise.all([
    db.$queryRaw<{ active: bigint; healthy: bigint }[]>`
      SELECT count(*) AS active,
             count(*) FILTER (WHERE COALESCE(last_heartbeat_at, created_at) >= ${healthySince}) AS healthy
      FROM workers WHERE status = 'Active'`,
    db.$queryRaw<{ sessions: bigint }[]>`
      SELECT count(*) AS sessions FROM worker_sessions WHERE superseded_at IS NULL AND expires_at > ${now}`,
    db.$queryRaw<{ application_id: number; handler: string; workers: bigint }[]>`
      SELECT w.application_id, h.handler, count(*) AS workers
      FROM workers w CROSS JOIN LATERAL unnest(w.handlers) AS h(handler)
      WHERE w.status = 'Active' AND COALESCE(w.last_heartbeat_at, w.created_at) >= ${healthySince}
      GROUP BY w.application_id, h.handler`,
  ]);
  return {
    active: Number(totals[0]?.active ?? 0),
    healthy: Number(totals[0]?.healthy ?? 0),
    sessions: Number(sessions[0]?.sessions ?? 0),
    healthyByHandler: byHandler.map((r) => ({ applicationId: r.application_id, handler: r.handler, workers: Number(r.workers) })),
  };
}
