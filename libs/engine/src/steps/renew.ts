import { LIVE_SESSION_SQL as SESSION, statement, type DbOrTx, type Queryable } from '@po/db';
import type { LeaseGrant, LeaseRequest } from './lease.js';

/**
 * Renew (addendum §12): the lease holder's lease extended, by the database clock; and, after an
 * outage the sweeper lived through, every lease that lapsed in it (decision 0120).
 */

// Renew row 6: the caller's own unexpired lease on the current execution of a Running stage.
const RENEW = statement(
  'lease_renew',
  `WITH sess AS (${SESSION})
   UPDATE stage_executions e SET lease_expires_at = GREATEST(e.lease_expires_at, now() + make_interval(secs => $5))
   FROM sess, stages s
   WHERE e.id = $3::uuid AND e.stage_id = $2 AND num_nulls(e.ended_at) = 1 AND e.lease_owner = $4 AND e.lease_expires_at > now()
     AND s.id = $2 AND s.current_execution_id = e.id AND s.status = 'Running'
     AND s.application_id = sess.application_id AND sess.worker_id = $4
     AND NOT EXISTS (SELECT 1 FROM pipelines p WHERE p.id = s.pipeline_id AND p.status = 'Cancelled')
   RETURNING e.attempt, e.lease_expires_at`,
);

/** Extends the lease to max(current expiry, now + leaseSeconds) when renew row 6 holds; null otherwise. */
export async function tryRenewLease(db: Queryable, r: LeaseRequest): Promise<LeaseGrant | null> {
  const [row] = await db.query<{ attempt: number; lease_expires_at: Date }>(RENEW, [r.sessionTokenHash, r.stageId, r.executionId, r.workerId, r.leaseSeconds]);
  return row ? { attempt: row.attempt, leaseExpiresAt: row.lease_expires_at } : null;
}

export async function extendLease(tx: DbOrTx, executionId: string, leaseExpiresAt: Date): Promise<void> {
  await tx.stageExecution.update({ where: { id: executionId }, data: { leaseExpiresAt } });
}

const RENEW_AFTER_OUTAGE = statement(
  'sweep_renew_after_outage',
  `WITH renewed AS (
     UPDATE stage_executions SET lease_expires_at = now() + make_interval(secs => $2::float8)
     WHERE ended_at IS NULL
       AND lease_expires_at > now() - make_interval(secs => $1::float8 / 1000)
       AND lease_expires_at < now() + make_interval(secs => $2::float8)
     RETURNING 1)
   SELECT count(*)::int AS renewed FROM renewed`,
  { plan: 'custom' },
);

/**
 * After an outage the sweeper lived through (decision 0120): every live lease that lapsed during
 * its last `outageMs` milliseconds, or would lapse within `leaseSeconds`, is set to expire
 * `leaseSeconds` from now, as one renewal of its holder would have. The handler timeout
 * (timeout_at) is left as it is. Returns how many leases it renewed.
 */
export async function renewLeasesAfterOutage(db: Queryable, outageMs: number, leaseSeconds: number): Promise<number> {
  const [row] = await db.query<{ renewed: number }>(RENEW_AFTER_OUTAGE, [outageMs, leaseSeconds]);
  return row?.renewed ?? 0;
}
