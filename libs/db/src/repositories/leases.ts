import { Batcher } from '../batcher.js';
import { statement, type Queryable, type Sql } from '../sql.js';

/**
 * The worker protocol's hot statements (decision 0062): each checks the worker session and decides
 * in one compare-and-set statement, by the database clock. When one matches no row, the caller
 * takes the slow path (lockExecutionState + the domain's decision tables) to learn why.
 *
 * A statement that addresses an execution by id tests "not ended" as `num_nulls(ended_at) = 1`,
 * not `ended_at IS NULL`: the sweeper's `(ended_at, …)` indexes cannot serve it, so the planner
 * always takes the primary key, even when its statistics (gathered while nothing ran) say no
 * execution is live and those indexes look cheaper (decision 0060).
 */

// A session is live while it is current, unexpired and the key that bootstrapped it is still valid:
// disabling or expiring a key ends its sessions at once (decision 0082), at the cost of one primary
// key probe of api_keys inside the same statement.
const KEY_REVOKED = `EXISTS (SELECT 1 FROM api_keys k WHERE k.id = sess.api_key_id
  AND (k.disabled_at IS NOT NULL OR k.expires_at <= now()))`;

const SESSION = `SELECT sess.worker_id, sess.application_id FROM worker_sessions sess
  WHERE sess.token_hash = $1 AND sess.superseded_at IS NULL AND sess.expires_at > now() AND NOT ${KEY_REVOKED}`;

// Acquire row 6 (addendum §12): the stage is Pending with this execution current, unended and never
// leased; the stage row's status is the compare-and-set, so of two concurrent acquires one wins.
const ACQUIRE = statement(
  'lease_acquire',
  `WITH sess AS (${SESSION}),
   st AS (
     UPDATE stages s SET status = 'Running', attempt = s.attempt + 1, started_at = COALESCE(s.started_at, now())
     FROM sess
     WHERE s.id = $2 AND s.status = 'Pending' AND s.current_execution_id = $3::uuid
       AND s.application_id = sess.application_id AND sess.worker_id = $4
       AND EXISTS (SELECT 1 FROM stage_executions x WHERE x.id = $3::uuid AND num_nulls(x.ended_at, x.lease_expires_at) = 2)
       AND NOT EXISTS (SELECT 1 FROM pipelines p WHERE p.id = s.pipeline_id AND p.status = 'Cancelled')
     RETURNING s.attempt, (s.options->>'timeOut')::int AS time_out
   )
   UPDATE stage_executions e SET attempt = st.attempt, lease_owner = $4, leased_at = now(),
     lease_expires_at = now() + make_interval(secs => $5), timeout_at = now() + make_interval(secs => st.time_out)
   FROM st WHERE e.id = $3::uuid
   RETURNING e.attempt, e.lease_expires_at`,
);

// ACQUIRE for several requests at once (decision 0108): the same conditions per request, one
// statement and one commit for all of them. Run in a keyLookups transaction, and every table is
// reached by its key alone (scalar subqueries, `= ANY`): a generic plan made while the tables were
// small must never scan them. The stage rows are locked in id order first, as the engine's passes
// lock them, so two batches (two replicas) or a batch and a pass cannot deadlock; FOR UPDATE hands
// back each row's latest version, so the conditions are decided on committed state. Each request
// names a distinct stage (the caller sees to it).
const ACQUIRE_MANY = statement(
  'lease_acquire_many',
  `WITH locked AS MATERIALIZED (
     SELECT s.id, s.application_id, s.status, s.current_execution_id, s.pipeline_id
     FROM stages s WHERE s.id = ANY($2::bigint[]) ORDER BY s.id FOR UPDATE
   ),
   granted AS MATERIALIZED (
     SELECT r.i, r.stage_id, r.execution_id, r.worker_id
     FROM unnest($1::text[], $2::bigint[], $3::uuid[], $4::text[]) WITH ORDINALITY AS r(token_hash, stage_id, execution_id, worker_id, i)
     JOIN locked l ON l.id = r.stage_id
     WHERE l.status = 'Pending' AND l.current_execution_id = r.execution_id
       AND l.application_id = (SELECT sess.application_id FROM worker_sessions sess
         WHERE sess.token_hash = r.token_hash AND sess.worker_id = r.worker_id AND sess.superseded_at IS NULL
           AND sess.expires_at > now() AND NOT ${KEY_REVOKED})
       AND (SELECT num_nulls(x.ended_at, x.lease_expires_at) FROM stage_executions x WHERE x.id = r.execution_id) = 2
       AND (SELECT p.status FROM pipelines p WHERE p.id = l.pipeline_id) <> 'Cancelled'
   ),
   st AS (
     UPDATE stages s SET status = 'Running', attempt = s.attempt + 1, started_at = COALESCE(s.started_at, now())
     FROM granted g WHERE s.id = g.stage_id AND s.id = ANY($2::bigint[])
     RETURNING g.i, g.execution_id, g.worker_id, s.attempt, (s.options->>'timeOut')::int AS time_out
   )
   UPDATE stage_executions e SET attempt = st.attempt, lease_owner = st.worker_id, leased_at = now(),
     lease_expires_at = now() + make_interval(secs => $5), timeout_at = now() + make_interval(secs => st.time_out)
   FROM st WHERE e.id = st.execution_id AND e.id = ANY($3::uuid[])
   RETURNING st.i, e.attempt, e.lease_expires_at`,
);

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

// Returns once no transaction holds the stage row for update: a dispatch that published its message
// before committing (decision 0061) has then committed or rolled back. FOR SHARE waits for such a
// holder; autocommit releases the lock at once. Only a stage of the session's own application.
const AWAIT_STAGE_ROW = statement(
  'lease_await_stage_row',
  `SELECT 1 FROM stages s JOIN worker_sessions sess ON sess.token_hash = $2 AND sess.application_id = s.application_id
   WHERE s.id = $1 FOR SHARE OF s`,
);

export interface LeaseGrant {
  attempt: number;
  leaseExpiresAt: Date;
}

export interface LeaseRequest {
  sessionTokenHash: string;
  stageId: number;
  /** Must be a UUID (the caller checks; anything else can never be current). */
  executionId: string;
  workerId: string;
  leaseSeconds: number;
}

/** Grants the lease when every condition of acquire row 6 holds for this session's worker; null otherwise. */
export async function tryAcquireLease(db: Queryable, r: LeaseRequest): Promise<LeaseGrant | null> {
  const [row] = await db.query<{ attempt: number; lease_expires_at: Date }>(ACQUIRE, [r.sessionTokenHash, r.stageId, r.executionId, r.workerId, r.leaseSeconds]);
  return row ? { attempt: row.attempt, leaseExpiresAt: row.lease_expires_at } : null;
}

/**
 * tryAcquireLease for each request, in one statement: the grants in request order (null where the
 * request's conditions did not all hold). Requests must name distinct stages and share leaseSeconds.
 */
export async function tryAcquireLeases(db: Sql, requests: readonly LeaseRequest[]): Promise<(LeaseGrant | null)[]> {
  const rows = await db.transaction((tx) => tx.query<{ i: string; attempt: number; lease_expires_at: Date }>(ACQUIRE_MANY, [
    requests.map((r) => r.sessionTokenHash),
    requests.map((r) => r.stageId),
    requests.map((r) => r.executionId),
    requests.map((r) => r.workerId),
    requests[0]?.leaseSeconds ?? 0,
  ]), { keyLookups: true });
  const grants: (LeaseGrant | null)[] = requests.map(() => null);
  for (const row of rows) grants[Number(row.i) - 1] = { attempt: row.attempt, leaseExpiresAt: row.lease_expires_at };
  return grants;
}

const acquirers = new WeakMap<Sql, Batcher<LeaseRequest, LeaseGrant | null>>();

/**
 * tryAcquireLease through group commit (decision 0108): an acquire that arrives while another is in
 * flight on this pool waits for it and goes with the others that arrived meanwhile, in one
 * statement; alone, it runs at once as tryAcquireLease. A second request for a stage already in the
 * batch goes on its own after it (its answer is null when the first one won), as does one with
 * another lease length.
 */
export function acquireLease(db: Sql, request: LeaseRequest): Promise<LeaseGrant | null> {
  let acquirer = acquirers.get(db);
  if (!acquirer) {
    acquirer = new Batcher<LeaseRequest, LeaseGrant | null>((requests) => acquireDistinct(db, requests), { maxBatch: 64, maxConcurrent: 1 });
    acquirers.set(db, acquirer);
  }
  return acquirer.submit(request);
}

async function acquireDistinct(db: Sql, requests: LeaseRequest[]): Promise<(LeaseGrant | null)[]> {
  const together: LeaseRequest[] = [];
  const stages = new Set<number>();
  for (const r of requests) {
    if (r.leaseSeconds !== requests[0]!.leaseSeconds || stages.has(r.stageId)) continue;
    stages.add(r.stageId);
    together.push(r);
  }
  const grants = together.length === 1 ? [await tryAcquireLease(db, together[0]!)] : await tryAcquireLeases(db, together);
  const grantOf = new Map(together.map((r, i) => [r, grants[i]!]));
  const out: (LeaseGrant | null)[] = [];
  for (const r of requests) out.push(grantOf.has(r) ? grantOf.get(r)! : await tryAcquireLease(db, r));
  return out;
}

/**
 * Waits until the stage row is free of a writer in flight (see AWAIT_STAGE_ROW). False when no such
 * row is visible: unknown, of another application, or inserted by a transaction not yet committed.
 */
export async function awaitStageRow(db: Queryable, r: { stageId: number; sessionTokenHash: string }): Promise<boolean> {
  return (await db.query(AWAIT_STAGE_ROW, [r.stageId, r.sessionTokenHash])).length > 0;
}

/** Extends the lease to max(current expiry, now + leaseSeconds) when renew row 6 holds; null otherwise. */
export async function tryRenewLease(db: Queryable, r: LeaseRequest): Promise<LeaseGrant | null> {
  const [row] = await db.query<{ attempt: number; lease_expires_at: Date }>(RENEW, [r.sessionTokenHash, r.stageId, r.executionId, r.workerId, r.leaseSeconds]);
  return row ? { attempt: row.attempt, leaseExpiresAt: row.lease_expires_at } : null;
}

// One read for a result's identity and ownership checks: the session, and the stage's owner and
// pipeline. (The result job itself, confirmed by Redis before the 202, is the receipt the sweeper
// asks for before it expires the execution: decision 0062.)
const CURRENT_SESSION = statement(
  'worker_session_current',
  `SELECT sess.worker_id, sess.application_id, sess.expires_at, ${KEY_REVOKED} AS key_revoked
   FROM worker_sessions sess WHERE sess.token_hash = $1 AND sess.superseded_at IS NULL`,
);

export interface WorkerSessionRecord {
  workerId: string;
  applicationId: number;
  expiresAt: Date;
  /** The API key that bootstrapped it is disabled or expired: the session has ended. */
  keyRevoked: boolean;
}

/** The current (not superseded) session of a token hash, expired or revoked or not. */
export async function findCurrentSession(db: Queryable, tokenHash: string): Promise<WorkerSessionRecord | null> {
  const [row] = await db.query<{ worker_id: string; application_id: number; expires_at: Date; key_revoked: boolean }>(CURRENT_SESSION, [tokenHash]);
  return row ? { workerId: row.worker_id, applicationId: row.application_id, expiresAt: row.expires_at, keyRevoked: row.key_revoked } : null;
}

// The stage is looked up only for a well-formed stage id ($2 null otherwise): the read runs before
// the path parameter is validated, so that credentials are answered first (addendum §3). The
// stage's current execution and its lease owner come along (one more primary key probe): a result
// of another worker is fenced anyway (addendum §12), and the gateway need not publish it.
const RESULT_INTAKE = statement(
  'result_intake',
  `SELECT sess.worker_id, sess.application_id AS session_application_id, sess.expires_at > now() AS live,
          ${KEY_REVOKED} AS key_revoked,
          LEAST(sess.expires_at, (SELECT k.expires_at FROM api_keys k WHERE k.id = sess.api_key_id)) AS valid_until,
          st.application_id AS stage_application_id, st.pipeline_id, st.span_id,
          ex.id::text AS execution_id, ex.lease_owner
   FROM (SELECT 1) one
   LEFT JOIN worker_sessions sess ON sess.token_hash = $1 AND sess.superseded_at IS NULL
   LEFT JOIN stages st ON st.id = $2::bigint
   LEFT JOIN stage_executions ex ON ex.id = st.current_execution_id`,
);

export interface ResultIntake {
  /** The session, when the token is a current one (expired or revoked or not). */
  session: null | { workerId: string; applicationId: number; live: boolean; keyRevoked: boolean; validUntil: Date };
  stage: null | {
    applicationId: number;
    pipelineId: number;
    spanId: string;
    /** The stage's current execution (null: none) and the worker its lease was granted to (null: never leased). */
    current: null | { executionId: string; leaseOwner: string | null };
  };
}

export async function resultIntake(db: Queryable, r: { sessionTokenHash: string; stageId: number | null }): Promise<ResultIntake> {
  const [row] = await db.query<{
    worker_id: string | null;
    session_application_id: number | null;
    live: boolean | null;
    key_revoked: boolean | null;
    valid_until: Date | null;
    stage_application_id: number | null;
    pipeline_id: string | null;
    span_id: string | null;
    execution_id: string | null;
    lease_owner: string | null;
  }>(RESULT_INTAKE, [r.sessionTokenHash, r.stageId]);
  return {
    session: row?.worker_id
      ? { workerId: row.worker_id, applicationId: row.session_application_id!, live: row.live === true, keyRevoked: row.key_revoked === true, validUntil: row.valid_until! }
      : null,
    stage:
      row?.stage_application_id != null
        ? {
            applicationId: row.stage_application_id,
            pipelineId: Number(row.pipeline_id),
            spanId: row.span_id!,
            current: row.execution_id === null ? null : { executionId: row.execution_id, leaseOwner: row.lease_owner },
          }
        : null,
  };
}

const TRACE_FACTS = statement(
  'stage_trace_facts',
  `SELECT s.id, s.pipeline_id, s.application_id, s.handler_name, s.span_id, p.trace_id
   FROM stages s JOIN pipelines p ON p.id = s.pipeline_id WHERE s.id = $1`,
);

/** What a span of a stage's hop needs (tracing on only): the pipeline's trace and the stage's span. */
export async function stageTraceFacts(
  db: Queryable,
  stageId: number,
): Promise<null | { pipelineTraceId: string; stage: { id: number; pipelineId: number; applicationId: number; handlerName: string; spanId: string } }> {
  const [r] = await db.query<{ id: string; pipeline_id: string; application_id: number; handler_name: string; span_id: string; trace_id: string }>(TRACE_FACTS, [stageId]);
  return r
    ? { pipelineTraceId: r.trace_id, stage: { id: Number(r.id), pipelineId: Number(r.pipeline_id), applicationId: r.application_id, handlerName: r.handler_name, spanId: r.span_id } }
    : null;
}
