import type { ExecutionEnd, PipelineStatus, StageOptions, StageStatus } from '@po/domain';
import { statement, type Queryable } from '@po/db';
import type { ExecutionRow } from './steps/lease.js';

/**
 * Persistence of one engine batch (libs/engine): lock the pipelines, read their stages, write every
 * decided change in one statement. Plain prepared statements (decision 0060): this is the hot path
 * of every stage. Lock order as everywhere: pipelines (in id order), then stages, then executions.
 *
 * The lock, the read and the write run on generic plans (decision 0107): they run only inside the
 * engine's `keyLookups` transaction, so the plan each connection makes once looks every row up by
 * key whatever the arrays hold, and planning them per batch cost 0.5 ms of PostgreSQL a batch.
 */

export interface LockedPipeline {
  id: number;
  applicationId: number;
  status: PipelineStatus;
  dispatched: boolean;
  traceId: string;
  /** The default priority of its stages (appended ones). */
  priority: number;
  /** Its application has handler settings (decision 0132): read with the lock, no round trip of its own. */
  handlerSettings: boolean;
  /** When the pending pass was requested (the ready moment, for the dispatch-latency metric). */
  dispatchRequestedAt: Date | null;
}

interface RawPipeline {
  id: string;
  application_id: number;
  status: PipelineStatus;
  dispatched: boolean;
  trace_id: string;
  priority: number;
  handler_settings: boolean;
  dispatch_requested_at: Date | null;
  now: Date;
}

const LOCK_COLUMNS = `id, application_id, status::text AS status, dispatched, trace_id, priority, dispatch_requested_at, now() AS now,
  EXISTS (SELECT 1 FROM handler_settings h WHERE h.application_id = pipelines.application_id) AS handler_settings`;
const LOCK_PIPELINES = statement(
  'engine_lock_pipelines',
  `SELECT ${LOCK_COLUMNS} FROM pipelines WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
);
const LOCK_PIPELINES_SKIP = statement(
  'engine_lock_pipelines_skip',
  `SELECT ${LOCK_COLUMNS} FROM pipelines WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE SKIP LOCKED`,
);
const NOW = statement('engine_now', 'SELECT now() AS now');

/**
 * Locks the pipelines in id order (so concurrent batches never deadlock); with skipLocked, those
 * another transaction holds are left out. `now` is PostgreSQL's transaction time: every deadline
 * and timestamp of the batch comes from the database clock, not the replica's.
 */
export async function lockPipelines(tx: Queryable, ids: readonly number[], skipLocked: boolean): Promise<{ now: Date; pipelines: LockedPipeline[] }> {
  const rows = await tx.query<RawPipeline>(skipLocked ? LOCK_PIPELINES_SKIP : LOCK_PIPELINES, [ids]);
  const now = rows[0]?.now ?? (await tx.query<{ now: Date }>(NOW))[0]!.now;
  return {
    now,
    pipelines: rows.map((r) => ({
      id: Number(r.id),
      applicationId: r.application_id,
      status: r.status,
      dispatched: r.dispatched,
      traceId: r.trace_id,
      priority: r.priority,
      handlerSettings: r.handler_settings,
      dispatchRequestedAt: r.dispatch_requested_at,
    })),
  };
}

/** A stage as a pass sees it, with its current execution (the only one a result or expiry may end). */
export interface PassStage {
  id: number;
  pipelineId: number;
  applicationId: number;
  position: number;
  name: string;
  handlerName: string;
  status: StageStatus;
  options: StageOptions;
  spanId: string;
  attempt: number;
  retryAttempt: number;
  failureCount: number;
  lastErrorCode: string | null;
  lastFailedAt: Date | null;
  failureDisposition: string | null;
  nextRetryAt: Date | null;
  finishedAt: Date | null;
  currentExecutionId: string | null;
  execution: ExecutionRow | null;
}

interface RawStage {
  id: string;
  pipeline_id: string;
  application_id: number;
  position: number;
  name: string;
  handler_name: string;
  status: StageStatus;
  options: StageOptions;
  span_id: string;
  attempt: number;
  retry_attempt: number;
  failure_count: number;
  last_error_code: string | null;
  last_failed_at: Date | null;
  failure_disposition: string | null;
  next_retry_at: Date | null;
  finished_at: Date | null;
  current_execution_id: string | null;
  e_id: string | null;
  e_attempt: number | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  timeout_at: Date | null;
  ended_at: Date | null;
  end_reason: ExecutionEnd | null;
}

// Read after the lock, in its own statement: under READ COMMITTED it then sees every change committed
// before the lock was granted. Inputs are not read here (they can be large); the write returns them
// for the stages it dispatches.
const READ_STAGES = statement(
  'engine_read_stages',
  `SELECT s.id, s.pipeline_id, s.application_id, s.position, s.name, s.handler_name, s.status::text AS status, s.options,
          s.span_id, s.attempt, s.retry_attempt, s.failure_count, s.last_error_code, s.last_failed_at, s.failure_disposition,
          s.next_retry_at, s.finished_at, s.current_execution_id::text AS current_execution_id,
          e.id::text AS e_id, e.attempt AS e_attempt, e.lease_owner, e.lease_expires_at, e.timeout_at, e.ended_at, e.end_reason
   FROM stages s
   -- A Completed or Skipped stage's execution has ended (in the transaction that completed it) and
   -- decides nothing: a NULL key skips its random lookup in the executions' key, which outgrows
   -- memory as history grows (a join filter on the status would still do the lookup).
   LEFT JOIN stage_executions e
     ON e.id = CASE WHEN s.status NOT IN ('Completed', 'Skipped') THEN s.current_execution_id END
   WHERE s.pipeline_id = ANY($1::bigint[])
   ORDER BY s.pipeline_id, s.position`,
);

/** Every stage of the (locked) pipelines in position order, grouped by pipeline. */
export async function readPassStages(tx: Queryable, pipelineIds: readonly number[]): Promise<Map<number, PassStage[]>> {
  const rows = await tx.query<RawStage>(READ_STAGES, [pipelineIds]);
  const byPipeline = new Map<number, PassStage[]>();
  for (const r of rows) {
    const stage: PassStage = {
      id: Number(r.id),
      pipelineId: Number(r.pipeline_id),
      applicationId: r.application_id,
      position: r.position,
      name: r.name,
      handlerName: r.handler_name,
      status: r.status,
      options: r.options,
      spanId: r.span_id,
      attempt: r.attempt,
      retryAttempt: r.retry_attempt,
      failureCount: r.failure_count,
      lastErrorCode: r.last_error_code,
      lastFailedAt: r.last_failed_at,
      failureDisposition: r.failure_disposition,
      nextRetryAt: r.next_retry_at,
      finishedAt: r.finished_at,
      currentExecutionId: r.current_execution_id,
      execution:
        r.e_id === null
          ? null
          : {
              id: r.e_id,
              attempt: r.e_attempt,
              leaseOwner: r.lease_owner,
              leaseExpiresAt: r.lease_expires_at,
              timeoutAt: r.timeout_at,
              endedAt: r.ended_at,
              endReason: r.end_reason,
            },
    };
    let list = byPipeline.get(stage.pipelineId);
    if (!list) byPipeline.set(stage.pipelineId, (list = []));
    list.push(stage);
  }
  return byPipeline;
}

const STAGE_PIPELINES = statement('engine_stage_pipelines', 'SELECT id, pipeline_id FROM stages WHERE id = ANY($1::bigint[])', { plan: 'custom' });

/** stageId → pipelineId, for result messages queued before they carried their pipeline. */
export async function pipelinesOfStages(db: Queryable, stageIds: readonly number[]): Promise<Map<number, number>> {
  const rows = await db.query<{ id: string; pipeline_id: string }>(STAGE_PIPELINES, [stageIds]);
  return new Map(rows.map((r) => [Number(r.id), Number(r.pipeline_id)]));
}

/** A stage row as a pass leaves it. `expected` is the status it was read with (compare-and-set). */
export interface StageWrite {
  id: number;
  expected: StageStatus;
  status: StageStatus;
  /** Set only for stages a result was applied to: output = the result (null when absent). */
  output?: string | null;
  finishedAt: Date | null;
  retryAttempt: number;
  failureCount: number;
  lastErrorCode: string | null;
  lastFailedAt: Date | null;
  failureDisposition: string | null;
  nextRetryAt: Date | null;
  currentExecutionId: string | null;
}

export interface PassWrite {
  now: Date;
  stages: StageWrite[];
  /** Executions ended: by an applied result, LEASE_EXPIRED or TIMEOUT (those only while still expired). */
  ended: { id: string; reason: ExecutionEnd }[];
  /** New executions (dispatch): attempt unassigned, no lease. */
  started: { id: string; stageId: number; applicationId: number }[];
  pipelines: { id: number; status: PipelineStatus; finishedAt: Date | null; nextPassAt: Date | null }[];
  logs: { stageId: number; pipelineId: number; message: string; logLevel: string; created: Date }[];
  /** Whose input (and pipeline context) the StageNext messages need. */
  dispatchedStageIds: number[];
  dispatchedPipelineIds: number[];
}

export interface PassWritten {
  stagesUpdated: number;
  /** The executions this write ended (an expiry whose lease was renewed meanwhile is not among them). */
  endedIds: Set<string>;
  /** stageId → input. */
  inputs: Map<number, string>;
  /** pipelineId → live context, in insertion order, real values. */
  context: Map<number, { key: string; value: string; valueType: string | null; isSensitive: boolean }[]>;
}

const WRITE_PASS = statement(
  'engine_write_pass',
  `WITH st AS (
     UPDATE stages s SET
       status = d.status::"StageStatus",
       output = CASE WHEN d.set_output THEN d.output ELSE s.output END,
       finished_at = d.finished_at, retry_attempt = d.retry_attempt, failure_count = d.failure_count,
       last_error_code = d.last_error_code, last_failed_at = d.last_failed_at, failure_disposition = d.failure_disposition,
       next_retry_at = d.next_retry_at, current_execution_id = d.current_execution_id
     FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bool[], $6::text[], $7::timestamptz[], $8::int[], $9::int[],
                 $10::text[], $11::timestamptz[], $12::text[], $13::timestamptz[], $14::uuid[])
       AS d(id, expected, status, set_output, output, finished_at, retry_attempt, failure_count,
            last_error_code, last_failed_at, failure_disposition, next_retry_at, current_execution_id)
     -- The status is compared as text so that no index on it can be chosen: a generic plan made
     -- while the table was small once reached the stages through (application_id, status),
     -- scanning every stage of the application in that status (9 ms a batch instead of 1.4).
     WHERE s.id = d.id AND s.status::text = d.expected
     RETURNING s.id
   ), ended AS (
     UPDATE stage_executions e SET ended_at = $1, end_reason = d.reason
     FROM unnest($15::uuid[], $16::text[]) AS d(id, reason)
     WHERE e.id = d.id AND num_nulls(e.ended_at) = 1
       AND (d.reason = 'result' OR e.lease_expires_at <= $1 OR e.timeout_at <= $1)
     RETURNING e.id
   ), started AS (
     INSERT INTO stage_executions (id, stage_id, application_id, dispatched_at)
     SELECT d.id, d.stage_id, d.application_id, $1 FROM unnest($17::uuid[], $18::bigint[], $19::int[]) AS d(id, stage_id, application_id)
   ), pl AS (
     UPDATE pipelines p SET status = d.status::"PipelineStatus", finished_at = COALESCE(d.finished_at, p.finished_at),
       dispatched = true, dispatch_requested_at = d.next_pass, updated_at = $1
     FROM unnest($20::bigint[], $21::text[], $22::timestamptz[], $23::timestamptz[]) AS d(id, status, finished_at, next_pass)
     WHERE p.id = d.id
   ), lg AS (
     INSERT INTO stage_logs (stage_id, pipeline_id, message, log_level, created)
     SELECT * FROM unnest($24::bigint[], $25::bigint[], $26::text[], $27::text[], $28::timestamptz[])
   )
   SELECT (SELECT count(*) FROM st)::int AS stages_updated,
          (SELECT coalesce(array_agg(id::text), '{}') FROM ended) AS ended_ids,
          (SELECT coalesce(json_agg(json_build_array(s.id, s.input)), '[]') FROM stages s WHERE s.id = ANY($29::bigint[])) AS inputs,
          (SELECT coalesce(json_agg(json_build_array(c.pipeline_id, c.key, c.value, c.value_type, c.is_sensitive) ORDER BY c.pipeline_id, c.id), '[]')
             FROM context_items c WHERE c.pipeline_id = ANY($30::bigint[])) AS context`,
);

/** Writes a whole batch in one statement and returns what the dispatched stages' messages need. */
export async function writePass(tx: Queryable, w: PassWrite): Promise<PassWritten> {
  const s = w.stages;
  const [row] = await tx.query<{
    stages_updated: number;
    ended_ids: string[];
    inputs: [number, string][];
    context: [number, string, string, string | null, boolean][];
  }>(WRITE_PASS, [
    w.now,
    s.map((x) => x.id),
    s.map((x) => x.expected),
    s.map((x) => x.status),
    s.map((x) => x.output !== undefined),
    s.map((x) => x.output ?? null),
    s.map((x) => x.finishedAt),
    s.map((x) => x.retryAttempt),
    s.map((x) => x.failureCount),
    s.map((x) => x.lastErrorCode),
    s.map((x) => x.lastFailedAt),
    s.map((x) => x.failureDisposition),
    s.map((x) => x.nextRetryAt),
    s.map((x) => x.currentExecutionId),
    w.ended.map((e) => e.id),
    w.ended.map((e) => e.reason),
    w.started.map((e) => e.id),
    w.started.map((e) => e.stageId),
    w.started.map((e) => e.applicationId),
    w.pipelines.map((p) => p.id),
    w.pipelines.map((p) => p.status),
    w.pipelines.map((p) => p.finishedAt),
    w.pipelines.map((p) => p.nextPassAt),
    w.logs.map((l) => l.stageId),
    w.logs.map((l) => l.pipelineId),
    w.logs.map((l) => l.message),
    w.logs.map((l) => l.logLevel),
    w.logs.map((l) => l.created),
    w.dispatchedStageIds,
    w.dispatchedPipelineIds,
  ]);
  const context = new Map<number, { key: string; value: string; valueType: string | null; isSensitive: boolean }[]>();
  for (const [pipelineId, key, value, valueType, isSensitive] of row!.context) {
    let list = context.get(Number(pipelineId));
    if (!list) context.set(Number(pipelineId), (list = []));
    list.push({ key, value, valueType, isSensitive });
  }
  return {
    stagesUpdated: row!.stages_updated,
    endedIds: new Set(row!.ended_ids),
    inputs: new Map(row!.inputs.map(([id, input]) => [Number(id), input])),
    context,
  };
}
