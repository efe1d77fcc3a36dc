import type { ExecutionEnd, PipelineStatus, StageOptions, StageStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';

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

export async function extendLease(tx: DbOrTx, executionId: string, leaseExpiresAt: Date): Promise<void> {
  await tx.stageExecution.update({ where: { id: executionId }, data: { leaseExpiresAt } });
}
