import { statement, type Queryable } from '../sql.js';

/**
 * What the sweeper (pipeline-service) looks for, by the database clock. Each query reads only live
 * rows through an index whose leading column is NULL for finished history (ended_at,
 * dispatch_requested_at), so its cost does not grow with the number of finished pipelines. They
 * are planned on every run (they run twice a second, not per stage), so a plan made while the
 * tables were small never outlives their growth.
 */

const EXPIRED = statement(
  'sweep_expired_executions',
  // Round robin over applications (each one's first due, then each one's second, ...): executions
  // the sweeper passes over (a result still waits for them) of one application never fill the page
  // that another application's expiries need (issue 28).
  `SELECT id::text AS id, stage_id, attempt, lease_owner, application_id, (SELECT pipeline_id FROM stages s WHERE s.id = e.stage_id) AS pipeline_id
   FROM (SELECT id, stage_id, attempt, lease_owner, application_id, LEAST(lease_expires_at, COALESCE(timeout_at, lease_expires_at)) AS due,
                row_number() OVER (PARTITION BY application_id ORDER BY LEAST(lease_expires_at, COALESCE(timeout_at, lease_expires_at)), id) AS turn
         FROM stage_executions
         WHERE ended_at IS NULL AND (lease_expires_at <= now() OR timeout_at <= now()) AND id <> ALL($2::uuid[])) e
   ORDER BY turn, due, id LIMIT $1`,
  { plan: 'custom' },
);

export interface ExecutionRef {
  executionId: string;
  applicationId: number;
  stageId: number;
  pipelineId: number;
  /** The attempt the lease granted (null: never leased). */
  attempt: number | null;
  /** The worker the lease was granted to (null: never leased): its result job is the one to look for. */
  leaseOwner: string | null;
}

/**
 * Live executions whose lease or handler timeout has passed (addendum §11), at most `limit`, taken
 * in turns per application, earliest due first within each; none of `skip` (ones the caller
 * already looked at).
 */
export async function expiredExecutions(db: Queryable, limit: number, skip: readonly string[] = []): Promise<ExecutionRef[]> {
  const rows = await db.query<{ id: string; stage_id: string; attempt: number | null; lease_owner: string | null; application_id: string; pipeline_id: string }>(EXPIRED, [
    limit,
    skip,
  ]);
  return rows.map((r) => ({ executionId: r.id, applicationId: Number(r.application_id), stageId: Number(r.stage_id), pipelineId: Number(r.pipeline_id), attempt: r.attempt, leaseOwner: r.lease_owner }));
}

const DUE = statement(
  'sweep_due_pipelines',
  `SELECT id FROM pipelines
   WHERE dispatch_requested_at <= now() - make_interval(secs => $1::float8 / 1000)
     AND status NOT IN ('Completed', 'Failed', 'Cancelled')
   ORDER BY dispatch_requested_at LIMIT $2`,
  { plan: 'custom' },
);

/** Pipelines whose pass was requested more than `graceMs` ago (a lost event, or a retry fallen due), oldest first. */
export async function pipelinesDueForDispatch(db: Queryable, graceMs: number, limit: number): Promise<number[]> {
  const rows = await db.query<{ id: string }>(DUE, [graceMs, limit]);
  return rows.map((r) => Number(r.id));
}

const THROTTLED = statement(
  'sweep_throttled_pipelines',
  // Per application, so the (application_id, status) index finds only Throttled stages: a filter on
  // status alone would read that whole index, which grows with every stage ever run.
  // A pass of one of an application's pipelines admits its Throttled stages elsewhere too (decision
  // 0132), so a few of the oldest per application are enough; those of paused handlers are left out
  // (they would be passed every sweep for nothing, and could crowd out the rest).
  `SELECT t.pipeline_id FROM applications a
   CROSS JOIN LATERAL (
     SELECT s.pipeline_id, s.id FROM stages s
     WHERE s.application_id = a.id AND s.status = 'Throttled'
       AND NOT EXISTS (SELECT 1 FROM handler_settings h WHERE h.application_id = a.id AND h.handler_name = s.handler_name AND h.paused)
     ORDER BY s.id LIMIT 8) t
   GROUP BY t.pipeline_id ORDER BY MIN(t.id) LIMIT $1`,
  { plan: 'custom' },
);

/** Pipelines holding Throttled stages of handlers not paused, oldest stage first: candidates when room frees up. */
export async function pipelinesWithThrottledStages(db: Queryable, limit: number): Promise<number[]> {
  const rows = await db.query<{ pipeline_id: string }>(THROTTLED, [limit]);
  return rows.map((r) => Number(r.pipeline_id));
}

const WAITING = statement(
  'sweep_waiting_executions',
  // The page is taken from the live executions alone (the ended_at index and a top-N sort), and
  // only its rows' stages are looked up: joining first made the planner join every live execution
  // to its stage before sorting (710 ms a page at 100,000 of them, 108 ms now; decision 0124).
  `SELECT e.id::text AS id, e.stage_id, e.dispatched_at, s.application_id, s.handler_name,
          (s.status = 'Pending' AND s.current_execution_id = e.id) AS waiting
   FROM (SELECT id, stage_id, dispatched_at FROM stage_executions
         WHERE ended_at IS NULL AND leased_at IS NULL AND dispatched_at < now() - make_interval(secs => $1::float8)
           AND (dispatched_at, id) > ($2::timestamptz, $3::uuid)
         ORDER BY dispatched_at, id LIMIT $4) e
   JOIN stages s ON s.id = e.stage_id
   ORDER BY e.dispatched_at, e.id`,
  { plan: 'custom' },
);

export interface WaitingExecution {
  executionId: string;
  stageId: number;
  applicationId: number;
  handlerName: string;
  dispatchedAt: Date;
}

export interface WaitingPage {
  /** The executions of the page still their stage's Pending one. */
  waiting: WaitingExecution[];
  /** Where the next page starts; null when this page was the last. */
  next: { dispatchedAt: Date; executionId: string } | null;
}

/**
 * A page of the dispatched executions never leased, dispatched (and so published, or about to be:
 * the engine publishes after it commits) more than `olderThanSeconds` ago, after the cursor
 * (dispatched_at, id) in that order: the lost-message walk reads them a page at a time to find
 * messages that Redis lost. `limit` executions are read; those whose stage moved on are left out.
 */
export async function waitingExecutions(
  db: Queryable,
  olderThanSeconds: number,
  after: { dispatchedAt: Date; executionId: string },
  limit: number,
): Promise<WaitingPage> {
  const rows = await db.query<{ id: string; stage_id: string; dispatched_at: Date; application_id: number; handler_name: string; waiting: boolean }>(WAITING, [
    olderThanSeconds,
    after.dispatchedAt,
    after.executionId,
    limit,
  ]);
  const last = rows.at(-1);
  return {
    waiting: rows
      .filter((r) => r.waiting)
      .map((r) => ({ executionId: r.id, stageId: Number(r.stage_id), applicationId: r.application_id, handlerName: r.handler_name, dispatchedAt: r.dispatched_at })),
    next: rows.length < limit || !last ? null : { dispatchedAt: last.dispatched_at, executionId: last.id },
  };
}

const HANDLER_QUEUE_SETTINGS = statement(
  'sweep_handler_queue_settings',
  `SELECT application_id, handler_name, paused, max_concurrent FROM handler_settings ORDER BY application_id, handler_name LIMIT $1`,
);

/** Every handler's settings that act on its StageNext queue (decision 0132), for the sweeper to hold the queues to them. */
export async function handlerQueueSettings(db: Queryable, limit: number): Promise<{ applicationId: number; handler: string; paused: boolean; maxConcurrent: number | null }[]> {
  const rows = await db.query<{ application_id: number; handler_name: string; paused: boolean; max_concurrent: number | null }>(HANDLER_QUEUE_SETTINGS, [limit]);
  return rows.map((r) => ({ applicationId: r.application_id, handler: r.handler_name, paused: r.paused, maxConcurrent: r.max_concurrent }));
}
