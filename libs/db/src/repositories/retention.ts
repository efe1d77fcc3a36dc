import { HEALTH_WINDOW, type RetentionFamily } from '@po/domain';
import { statement, type Queryable, type Sql } from '../sql.js';

/**
 * Retention deletes (decision 0083, docs/retention.md). Every batch is its own short transaction
 * that takes at most `limit` rows of the table it walks: candidates are chosen and locked in one
 * subselect with `FOR UPDATE SKIP LOCKED`, so a batch never waits for a row another transaction
 * holds (the engine, a request, another replica's batch) and replicas split the work instead of
 * queueing behind each other (a pipeline's children go with it under its lock, and a 2 s lock
 * timeout bounds any wait left). Each walk follows an index on the age column (migration
 * 20261124110000_retention), so a batch costs what it deletes, not the table's size; only the small
 * `workers` table is scanned.
 */

/** Rows a batch deleted, by table, and how many candidates it took (compared with the limit). */
export interface RetentionBatch {
  deleted: Partial<Record<RetentionTable, number>>;
  taken: number;
}

export type RetentionTable =
  | 'pipelines'
  | 'stages'
  | 'stage_executions'
  | 'stage_logs'
  | 'context_items'
  | 'pipeline_keywords'
  | 'idempotency_keys'
  | 'worker_events'
  | 'worker_sessions'
  | 'workers'
  | 'schedule_runs'
  | 'system_logs'
  | 'webhook_deliveries';

/** One kind of batch: deletes at most `limit` candidates older than `cutoff`. */
export type RetentionStep = (sql: Sql, cutoff: Date, limit: number) => Promise<RetentionBatch>;

const TERMINAL = `('Completed', 'Failed', 'Cancelled')`;
/** A statement waiting this long for a lock gives up; the batch is tried again next round. */
const LOCK_TIMEOUT = statement(
  'retention_lock_timeout',
  `SELECT set_config('lock_timeout', '2s', true)`,
);

/** `WITH d AS (<delete … RETURNING 1>) SELECT count(*)`: the count without shipping the rows. */
const counted = (name: string, deleteReturningOne: string) =>
  statement(name, `WITH d AS (${deleteReturningOne}) SELECT count(*)::int AS n FROM d`, {
    plan: 'custom',
  });

async function count(
  db: Queryable,
  s: ReturnType<typeof counted>,
  values: readonly unknown[],
): Promise<number> {
  const [row] = await db.query<{ n: number }>(s, values);
  return row?.n ?? 0;
}

// --- pipelines and their children ---------------------------------------------------------------

/**
 * Terminal pipelines that ended before $1, oldest first. A scheduled pipeline stays while its run
 * is among its schedule's newest HEALTH_WINDOW: the schedule's last-run fields and health read
 * those runs' pipeline statuses (addendum §14.9), and a deleted pipeline would read as running.
 */
const LOCK_PIPELINES = statement(
  'retention_lock_pipelines',
  `SELECT p.id, p.application_id, p.idempotency_key FROM pipelines p
   WHERE p.finished_at < $1 AND p.status IN ${TERMINAL}
     AND (p.schedule_id IS NULL OR NOT EXISTS (
       SELECT 1 FROM (SELECT r.pipeline_id FROM schedule_runs r WHERE r.schedule_id = p.schedule_id
                      ORDER BY r.id DESC LIMIT ${HEALTH_WINDOW}) recent
       WHERE recent.pipeline_id = p.id))
   ORDER BY p.finished_at LIMIT $2
   FOR UPDATE OF p SKIP LOCKED`,
  { plan: 'custom' },
);

/** Stage logs are the one child without a bound per pipeline: they are taken `limit` at a time. */
const DELETE_STAGE_LOGS = counted(
  'retention_delete_stage_logs',
  `DELETE FROM stage_logs WHERE id IN (
     SELECT l.id FROM stages s JOIN stage_logs l ON l.stage_id = s.id WHERE s.pipeline_id = ANY($1::bigint[]) LIMIT $2)
   RETURNING 1`,
);

/** The other children, bounded per pipeline by the creation limits; none references another. */
const DELETE_CHILDREN = statement(
  'retention_delete_pipeline_children',
  `WITH executions AS (
     DELETE FROM stage_executions WHERE stage_id IN (SELECT id FROM stages WHERE pipeline_id = ANY($1::bigint[])) RETURNING 1),
   context AS (DELETE FROM context_items WHERE pipeline_id = ANY($1::bigint[]) RETURNING 1),
   -- Unread below, like runs: snapshots are not a family of their own (decision 0121).
   snapshots AS (DELETE FROM context_snapshots WHERE pipeline_id = ANY($1::bigint[])),
   keywords AS (DELETE FROM pipeline_keywords WHERE pipeline_id = ANY($1::bigint[]) RETURNING 1),
   idempotency AS (
     DELETE FROM idempotency_keys k USING unnest($1::bigint[], $2::int[], $3::text[]) AS d(pipeline_id, application_id, key)
     WHERE k.application_id = d.application_id AND k.key = d.key AND k.pipeline_id = d.pipeline_id RETURNING 1),
   -- Unread below: PostgreSQL runs every data-modifying WITH to completion all the same.
   runs AS (UPDATE schedule_runs SET pipeline_id = NULL WHERE pipeline_id = ANY($1::bigint[]))
   SELECT (SELECT count(*) FROM executions)::int AS stage_executions, (SELECT count(*) FROM context)::int AS context_items,
          (SELECT count(*) FROM keywords)::int AS pipeline_keywords, (SELECT count(*) FROM idempotency)::int AS idempotency_keys`,
  { plan: 'custom' },
);

// Parents go in later statements than their children: the sub-statements of one WITH share a
// snapshot, and the RESTRICT foreign keys must not depend on the order PostgreSQL runs them in.
// A concurrency key's row (decision 0135) goes with the last stages of it that retention deletes
// while nothing of the key is in flight; one an engine batch holds is skipped, not waited for (the
// next batch that deletes stages of that key takes it), and an absent row counts as zero.
const DELETE_STAGES = statement(
  'retention_delete_stages',
  `WITH d AS (DELETE FROM stages WHERE pipeline_id = ANY($1::bigint[]) RETURNING application_id, concurrency_key),
   idle AS (
     DELETE FROM concurrency_keys WHERE (application_id, key) IN (
       SELECT k.application_id, k.key FROM concurrency_keys k
       WHERE (k.application_id, k.key) IN (SELECT application_id, concurrency_key FROM d WHERE concurrency_key IS NOT NULL)
         AND k.in_flight = 0
       FOR UPDATE SKIP LOCKED))
   SELECT count(*)::int AS n FROM d`,
  { plan: 'custom' },
);
const DELETE_PIPELINES = counted(
  'retention_delete_pipelines',
  `DELETE FROM pipelines WHERE id = ANY($1::bigint[]) RETURNING 1`,
);

/**
 * Deletes up to `limit` terminal pipelines that ended before the cutoff, with their stages,
 * executions, logs, context items, keywords and idempotency keys, and unlinks the schedule runs
 * that named them (the run stays, with no pipeline). When their stage logs alone fill the batch,
 * only logs are deleted and the same pipelines come first in the next batch. A GET of a deleted
 * pipeline is a 404; a late result for one of its executions is dropped by the engine (no row to
 * fence against).
 */
export const deleteExpiredPipelines: RetentionStep = (sql, cutoff, limit) =>
  sql.transaction(async (tx) => {
    await tx.query(LOCK_TIMEOUT);
    const locked = await tx.query<{
      id: string;
      application_id: number;
      idempotency_key: string | null;
    }>(LOCK_PIPELINES, [cutoff, limit]);
    if (locked.length === 0) return { deleted: {}, taken: 0 };
    const ids = locked.map((p) => p.id);
    const logs = await count(tx, DELETE_STAGE_LOGS, [ids, limit]);
    if (logs >= limit) return { deleted: { stage_logs: logs }, taken: limit };

    // Pipelines without a key have a null key in the parallel arrays, which matches no row.
    const [children] = await tx.query<{
      stage_executions: number;
      context_items: number;
      pipeline_keywords: number;
      idempotency_keys: number;
    }>(DELETE_CHILDREN, [
      ids,
      locked.map((p) => p.application_id),
      locked.map((p) => p.idempotency_key),
    ]);
    const stages = await count(tx, DELETE_STAGES, [ids]);
    const pipelines = await count(tx, DELETE_PIPELINES, [ids]);
    return {
      deleted: {
        stage_logs: logs,
        stage_executions: children?.stage_executions ?? 0,
        context_items: children?.context_items ?? 0,
        pipeline_keywords: children?.pipeline_keywords ?? 0,
        idempotency_keys: children?.idempotency_keys ?? 0,
        stages,
        pipelines,
      },
      taken: locked.length,
    };
  });

// --- single-table families ------------------------------------------------------------------------

const DELETE_WORKER_EVENTS = counted(
  'retention_delete_worker_events',
  `DELETE FROM worker_events WHERE id IN (
     SELECT id FROM worker_events WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
   RETURNING 1`,
);

const DELETE_SYSTEM_LOGS = counted(
  'retention_delete_system_logs',
  `DELETE FROM system_logs WHERE id IN (
     SELECT id FROM system_logs WHERE created_at < $1 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
   RETURNING 1`,
);

/** Sessions that expired, or were superseded by a re-bootstrap, before the cutoff: their token is dead. */
const DELETE_WORKER_SESSIONS = counted(
  'retention_delete_worker_sessions',
  `DELETE FROM worker_sessions WHERE token_hash IN (
     SELECT token_hash FROM worker_sessions WHERE expires_at < $1 OR superseded_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
   RETURNING 1`,
);

/**
 * Workers untouched (no bootstrap, heartbeat or shutdown) since the cutoff with no session and no
 * event left. A worker that comes back bootstraps a new row, as a new instance would.
 */
const DELETE_WORKERS = counted(
  'retention_delete_workers',
  `DELETE FROM workers WHERE id IN (
     SELECT w.id FROM workers w
     WHERE w.updated_at < $1
       AND NOT EXISTS (SELECT 1 FROM worker_sessions s WHERE s.worker_id = w.id)
       AND NOT EXISTS (SELECT 1 FROM worker_events e WHERE e.worker_id = w.id)
     LIMIT $2 FOR UPDATE OF w SKIP LOCKED)
   RETURNING 1`,
);

/**
 * Runs created before the cutoff, except what the scheduler and the schedule reads still need:
 * Queued runs (Queue promotion), runs among the schedule's newest HEALTH_WINDOW (last-run fields
 * and health), runs whose pipeline is not terminal, and a tick the plan has not passed (the unique
 * (schedule, tick) must keep refusing a second run of it; handled ticks are never planned again).
 */
const DELETE_SCHEDULE_RUNS = counted(
  'retention_delete_schedule_runs',
  `DELETE FROM schedule_runs WHERE id IN (
     SELECT r.id FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
     WHERE r.created_at < $1 AND r.status <> 'Queued'
       AND (r.tick IS NULL OR r.tick <= s.plan_anchor)
       AND r.id < (SELECT w.id FROM schedule_runs w WHERE w.schedule_id = r.schedule_id
                   ORDER BY w.id DESC OFFSET ${HEALTH_WINDOW - 1} LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM pipelines p WHERE p.id = r.pipeline_id AND p.status NOT IN ${TERMINAL})
     ORDER BY r.created_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED)
   RETURNING 1`,
);

/**
 * Webhook deliveries that ended (Delivered or Failed) and were created before the cutoff: they
 * follow the pipelines they were about (decision 0134). A Pending one is kept, however old.
 */
const DELETE_WEBHOOK_DELIVERIES = counted(
  'retention_delete_webhook_deliveries',
  `DELETE FROM webhook_deliveries WHERE id IN (
     SELECT id FROM webhook_deliveries WHERE created_at < $1 AND status <> 'Pending'
     ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
   RETURNING 1`,
);

/** A one-statement batch (autocommit: its own transaction). */
const single =
  (table: RetentionTable, s: ReturnType<typeof counted>): RetentionStep =>
  async (sql, cutoff, limit) => {
    const n = await count(sql, s, [cutoff, limit]);
    return { deleted: { [table]: n }, taken: n };
  };

export const deleteOldWorkerEvents = single('worker_events', DELETE_WORKER_EVENTS);
export const deleteOldSystemLogs = single('system_logs', DELETE_SYSTEM_LOGS);
export const deleteOldWorkerSessions = single('worker_sessions', DELETE_WORKER_SESSIONS);
export const deleteIdleWorkers = single('workers', DELETE_WORKERS);
export const deleteOldScheduleRuns = single('schedule_runs', DELETE_SCHEDULE_RUNS);
export const deleteOldWebhookDeliveries = single('webhook_deliveries', DELETE_WEBHOOK_DELIVERIES);

/** The steps of each family, in order: each is repeated while its batches come back full. */
export const RETENTION_STEPS: Readonly<Record<RetentionFamily, readonly RetentionStep[]>> = {
  pipelines: [deleteExpiredPipelines, deleteOldWebhookDeliveries],
  workerEvents: [deleteOldWorkerEvents],
  // Sessions first: a worker row goes once its last session has.
  workerSessions: [deleteOldWorkerSessions, deleteIdleWorkers],
  scheduleRuns: [deleteOldScheduleRuns],
  systemLogs: [deleteOldSystemLogs],
};
