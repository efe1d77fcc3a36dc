import { statement, type Queryable } from '../sql.js';

/**
 * What the worker-gateway reads about a worker's session and the stage it names (the lease and
 * result writes are the engine's, libs/engine/src/steps/lease.ts and renew.ts).
 */

// A session is live while it is current, unexpired and the key that bootstrapped it is still valid:
// disabling or expiring a key ends its sessions at once (decision 0082), at the cost of one primary
// key probe of api_keys inside the same statement.
export const KEY_REVOKED_SQL = `EXISTS (SELECT 1 FROM api_keys k WHERE k.id = sess.api_key_id
  AND (k.disabled_at IS NOT NULL OR k.expires_at <= now()))`;

/** The live session of token hash $1: its worker_id and application_id (used by the engine's lease statements). */
export const LIVE_SESSION_SQL = `SELECT sess.worker_id, sess.application_id FROM worker_sessions sess
  WHERE sess.token_hash = $1 AND sess.superseded_at IS NULL AND sess.expires_at > now() AND NOT ${KEY_REVOKED_SQL}`;

// One read for a result's identity and ownership checks: the session, and the stage's owner and
// pipeline. (The result job itself, confirmed by Redis before the 202, is the receipt the sweeper
// asks for before it expires the execution: decision 0062.)
const CURRENT_SESSION = statement(
  'worker_session_current',
  `SELECT sess.worker_id, sess.application_id, sess.expires_at, ${KEY_REVOKED_SQL} AS key_revoked
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
          ${KEY_REVOKED_SQL} AS key_revoked,
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
