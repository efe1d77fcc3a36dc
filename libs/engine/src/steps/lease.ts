import type { ExecutionEnd, PipelineStatus, StageOptions, StageStatus } from '@po/domain';
import { Batcher, KEY_REVOKED_SQL as KEY_REVOKED, LIVE_SESSION_SQL as SESSION, statement, type DbOrTx, type Queryable, type Sql } from '@po/db';

/**
 * Lease (addendum §12): a Pending stage becomes Running for the worker whose session asks, its
 * attempt counted, its handler timeout started. The hot path is one compare-and-set statement that
 * also checks the session (decision 0062), batched with the others in flight (decision 0108); when
 * it matches no row the caller takes the slow path (lockExecutionState and the domain's decision
 * tables, then grantLease) to learn why.
 *
 * A statement that addresses an execution by id tests "not ended" as `num_nulls(ended_at) = 1`,
 * not `ended_at IS NULL`: the sweeper's `(ended_at, …)` indexes cannot serve it, so the planner
 * always takes the primary key, even when its statistics (gathered while nothing ran) say no
 * execution is live and those indexes look cheaper (decision 0060).
 */

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

const UUID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

export interface ExecutionState {
  /** PostgreSQL's clock for this transaction: lease and timeout decisions use it, never a replica's. */
  now: Date;
  pipelineStatus: PipelineStatus;
  /** The pipeline's traceId (tracing: the trace every hop of the stage joins). */
  pipelineTraceId: string;
  stage: {
    id: number;
    pipelineId: number;
    applicationId: number;
    status: StageStatus;
    attempt: number;
    retryAttempt: number;
    failureCount: number;
    options: StageOptions;
    currentExecutionId: string | null;
    startedAt: Date | null;
    handlerName: string;
    /** The stage's span id, fixed at creation. */
    spanId: string;
  };
  /** The execution named by the caller, when it exists for this stage. */
  execution: ExecutionRow | null;
}

/** What lease, fencing and expiry decisions read of an execution. */
export interface ExecutionRow {
  id: string;
  attempt: number | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  timeoutAt: Date | null;
  endedAt: Date | null;
  endReason: ExecutionEnd | null;
}

interface RawStage {
  id: bigint;
  pipeline_id: bigint;
  application_id: number;
  status: StageStatus;
  attempt: number;
  retry_attempt: number;
  failure_count: number;
  options: StageOptions;
  current_execution_id: string | null;
  started_at: Date | null;
  handler_name: string;
  span_id: string;
  pipeline_status: PipelineStatus;
  trace_id: string;
  now: Date;
}

interface RawExecution {
  id: string;
  attempt: number | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  timeout_at: Date | null;
  ended_at: Date | null;
  end_reason: ExecutionEnd | null;
}

/**
 * Reads, under row locks, what lease, fencing and expiry decisions need. Lock
 * order: pipeline (when `lockPipeline`), then stage. The execution row needs no lock of its own:
 * every writer of executions (lease, renew, result, expiry, cancel) locks the stage first.
 * Null when the stage does not exist.
 */
export async function lockExecutionState(
  tx: DbOrTx,
  stageId: number,
  executionId: string,
  options: { lockPipeline: boolean },
): Promise<ExecutionState | null> {
  const sid = BigInt(stageId);
  if (options.lockPipeline) {
    await tx.$queryRaw`SELECT p.id FROM pipelines p JOIN stages s ON s.pipeline_id = p.id WHERE s.id = ${sid} FOR UPDATE OF p`;
  }
  const rows = await tx.$queryRaw<RawStage[]>`
    SELECT s.id, s.pipeline_id, s.application_id, s.status::text AS status, s.attempt, s.retry_attempt,
           s.failure_count, s.options, s.current_execution_id::text AS current_execution_id, s.started_at,
           s.handler_name, s.span_id, p.status::text AS pipeline_status, p.trace_id, now() AS now
    FROM stages s JOIN pipelines p ON p.id = s.pipeline_id
    WHERE s.id = ${sid} FOR UPDATE OF s`;
  // A separate statement, after the lock: under READ COMMITTED a row joined into the locking
  // statement would come from the snapshot taken before waiting for the lock (stale).
  const executions = UUID.test(executionId)
    ? await tx.$queryRaw<RawExecution[]>`
        SELECT id::text AS id, attempt, lease_owner, lease_expires_at, timeout_at, ended_at, end_reason
        FROM stage_executions WHERE id = ${executionId}::uuid AND stage_id = ${sid}`
    : [];
  const r = rows[0];
  const e = executions[0];
  if (!r) return null;
  return {
    now: r.now,
    pipelineStatus: r.pipeline_status,
    pipelineTraceId: r.trace_id,
    stage: {
      id: Number(r.id),
      pipelineId: Number(r.pipeline_id),
      applicationId: r.application_id,
      status: r.status,
      attempt: r.attempt,
      retryAttempt: r.retry_attempt,
      failureCount: r.failure_count,
      options: r.options,
      currentExecutionId: r.current_execution_id,
      startedAt: r.started_at,
      handlerName: r.handler_name,
      spanId: r.span_id,
    },
    execution: e
      ? {
          id: e.id,
          attempt: e.attempt,
          leaseOwner: e.lease_owner,
          leaseExpiresAt: e.lease_expires_at,
          timeoutAt: e.timeout_at,
          endedAt: e.ended_at,
          endReason: e.end_reason,
        }
      : null,
  };
}

/** Lease granted (addendum §7, §12): attempt + 1, Running, startedAt on the first grant, timeout clock starts. */
export async function grantLease(
  tx: DbOrTx,
  state: ExecutionState,
  grant: { executionId: string; attempt: number; workerId: string; now: Date; leaseExpiresAt: Date },
): Promise<void> {
  const timeOut = state.stage.options.timeOut;
  const timeoutAt = timeOut ? new Date(grant.now.getTime() + timeOut * 1000) : null;
  await tx.$executeRaw`
    WITH stage AS (
      UPDATE stages SET status = 'Running', attempt = ${grant.attempt}, started_at = COALESCE(started_at, ${grant.now})
      WHERE id = ${BigInt(state.stage.id)}
    )
    UPDATE stage_executions
    SET attempt = ${grant.attempt}, lease_owner = ${grant.workerId}, leased_at = ${grant.now},
        lease_expires_at = ${grant.leaseExpiresAt}, timeout_at = ${timeoutAt}
    WHERE id = ${grant.executionId}::uuid`;
}

