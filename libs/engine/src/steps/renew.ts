import { LIVE_SESSION_SQL as SESSION, statement, type DbOrTx, type Queryable } from '@po/db';
import type { LeaseGrant, LeaseRequest } from './lease.js';

/** Renew (addendum §12): the lease holder's lease extended, by the database clock. */

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
