import type { PipelineStatus, StageStatus } from '@po/domain';

/**
 * Everything a PipelineResponse shows, as one JSON value built by PostgreSQL (decision 0070): the
 * creation statement builds it from the rows it inserted, the reads from one snapshot. Ids are
 * JSON numbers (the API caps them at 2^53 - 1); timestamps are ISO strings until `pipelineRecord`.
 */

export interface StageLogRecord {
  id: number;
  stageId: number;
  message: string;
  logLevel: string;
  created: Date;
  /** A copy of the original run's log, on a stage a rerun from the failure carried over. */
  carriedOver: boolean;
}

export interface StageRecord {
  id: number;
  pipelineId: number;
  position: number;
  spanId: string;
  name: string;
  handlerName: string;
  description: string | null;
  status: StageStatus;
  createdAt: Date;
  finishedAt: Date | null;
  startedAt: Date | null;
  nextRetryAt: Date | null;
  output: string | null;
  input: string;
  isEvent: boolean;
  /** Normalised StageOptions as stored (jsonb). */
  options: unknown;
  failureCount: number;
  lastFailedAt: Date | null;
  attempt: number;
  retryAttempt: number;
  lastErrorCode: string | null;
  failureDisposition: string | null;
  /** The original run's stage this one was carried over from, Completed, by a rerun from the failure; null otherwise. */
  carriedOverFrom: number | null;
  /** Lease holder of the current execution (the worker id), null before a lease (or on creation). */
  workerId: string | null;
  /** The current execution's lease grant and end. */
  attemptStartedAt: Date | null;
  attemptEndedAt: Date | null;
  /** The newest logs (STAGE_LOG_WINDOW), ordered by created then id. */
  logs: StageLogRecord[];
  /** Older logs exist than those in `logs` (read them with readStageLogPage). */
  logsTruncated: boolean;
}

export interface ContextItemRecord {
  key: string;
  value: string;
  valueType: string | null;
  isSensitive: boolean;
}

export interface PipelineRecord {
  id: number;
  applicationId: number;
  name: string;
  traceId: string;
  status: PipelineStatus;
  createdAt: Date;
  finishedAt: Date | null;
  idempotencyKey: string | null;
  /** In position order. */
  stages: StageRecord[];
  /** Live items in id order (a deleted key is a removed row). */
  contextItems: ContextItemRecord[];
  /** In id order. */
  keywords: { key: string; value: string }[];
  /** The pipeline this one reruns (it may have been deleted since), or null. */
  rerunOf: number | null;
  /** Ids of this pipeline's newest reruns (at most RERUNS_SHOWN), newest first. */
  reruns: number[];
}

/** How many of a pipeline's reruns its read names (newest first). */
export const RERUNS_SHOWN = 20;

/**
 * What a pipeline read shows of each stage's logs: the newest `count`, and of those only as many
 * as fit in `bytes` of message text (the newest one always). A stage may have any number of logs
 * of up to ~320 KiB each (a result body), so a count alone would not bound the read: 100 stages ×
 * 100 logs could be gigabytes. With this window a read holds at most ~32 MiB of log text.
 */
export const STAGE_LOG_WINDOW = { count: 100, bytes: 262_144 } as const;

/**
 * The JSON object of stage row `s`; `logs` is an SQL expression of its json array of logs and
 * `logsTruncated` a boolean one (no stage of a creation has logs). `execution` names the joined
 * stage_executions row of the stage's current execution, when there can be one (not on creation).
 */
export function stageJson(s: string, logs: string, logsTruncated = 'false', execution?: string): string {
  const ex = (column: string) => (execution === undefined ? 'NULL' : `${execution}.${column}`);
  return `json_build_object(
    'id', ${s}.id, 'pipelineId', ${s}.pipeline_id, 'position', ${s}.position, 'spanId', ${s}.span_id,
    'name', ${s}.name, 'handlerName', ${s}.handler_name, 'description', ${s}.description,
    'status', ${s}.status, 'createdAt', ${s}.created_at, 'finishedAt', ${s}.finished_at,
    'startedAt', ${s}.started_at, 'nextRetryAt', ${s}.next_retry_at, 'output', ${s}.output,
    'input', ${s}.input, 'isEvent', ${s}.is_event, 'options', ${s}.options,
    'failureCount', ${s}.failure_count, 'lastFailedAt', ${s}.last_failed_at, 'attempt', ${s}.attempt,
    'retryAttempt', ${s}.retry_attempt, 'lastErrorCode', ${s}.last_error_code,
    'failureDisposition', ${s}.failure_disposition, 'carriedOverFrom', ${s}.carried_over_from,
    'logs', ${logs}, 'logsTruncated', ${logsTruncated},
    'workerId', ${ex('lease_owner')}, 'attemptStartedAt', ${ex('leased_at')}, 'attemptEndedAt', ${ex('ended_at')})`;
}

/**
 * The window of stage row `s`'s logs (STAGE_LOG_WINDOW), joined as `lg(logs, truncated)`: the
 * newest count + 1 rows by the (stage_id, created, id) index, whatever the stage holds; their
 * sizes come from octet_length, which does not detoast a message; only shown ones are built.
 */
const storedLogsJoin = (s: string): string => `LEFT JOIN LATERAL (
  SELECT json_agg(json_build_object(
           'id', w.id, 'stageId', w.stage_id, 'message', w.message, 'logLevel', w.log_level, 'created', w.created,
           'carriedOver', w.carried_over)
           ORDER BY w.created, w.id) FILTER (WHERE w.shown) AS logs,
         bool_or(NOT w.shown) AS truncated
  FROM (SELECT l.*, (row_number() OVER newest) <= ${STAGE_LOG_WINDOW.count}
                    AND ((row_number() OVER newest) = 1 OR (sum(octet_length(l.message)) OVER newest) <= ${STAGE_LOG_WINDOW.bytes}) AS shown
        FROM (SELECT id, stage_id, message, log_level, created, carried_over FROM stage_logs WHERE stage_id = ${s}.id
              ORDER BY created DESC, id DESC LIMIT ${STAGE_LOG_WINDOW.count + 1}) l
        WINDOW newest AS (ORDER BY l.created DESC, l.id DESC)) w
) lg ON true`;

/**
 * The JSON object of pipeline row `p`. `rows` names where its stages, context items and keywords
 * are read from: the tables for a read, the creation's RETURNING rows for a creation.
 */
export function pipelineJson(
  p: string,
  rows: {
    stages: string;
    context: string;
    keywords: string;
    logs: (s: string) => string;
    /** Joined to each stage row `s` when `logs` reads from it. */
    logsJoin?: (s: string) => string;
    logsTruncated?: (s: string) => string;
    /** Joins each stage row `s` to its current execution as `ex` (a read; a creation has none). */
    executionJoin?: (s: string) => string;
    /** Json array of the ids of pipeline `p`'s newest reruns; none by default (a new pipeline). */
    reruns?: (p: string) => string;
  },
): string {
  return `json_build_object(
    'id', ${p}.id, 'applicationId', ${p}.application_id, 'name', ${p}.name, 'traceId', ${p}.trace_id,
    'status', ${p}.status, 'createdAt', ${p}.created_at, 'finishedAt', ${p}.finished_at,
    'idempotencyKey', ${p}.idempotency_key, 'rerunOf', ${p}.rerun_of,
    'reruns', ${rows.reruns?.(p) ?? `'[]'::json`},
    'stages', (SELECT coalesce(json_agg(${stageJson('s', rows.logs('s'), rows.logsTruncated?.('s'), rows.executionJoin ? 'ex' : undefined)} ORDER BY s.position), '[]'::json)
               FROM ${rows.stages} s ${rows.logsJoin?.('s') ?? ''} ${rows.executionJoin?.('s') ?? ''} WHERE s.pipeline_id = ${p}.id),
    'contextItems', (SELECT coalesce(json_agg(json_build_object(
                       'key', c.key, 'value', c.value, 'valueType', c.value_type, 'isSensitive', c.is_sensitive)
                       ORDER BY c.id), '[]'::json)
                     FROM ${rows.context} c WHERE c.pipeline_id = ${p}.id),
    'keywords', (SELECT coalesce(json_agg(json_build_object('key', k.key, 'value', k.value) ORDER BY k.id), '[]'::json)
                 FROM ${rows.keywords} k WHERE k.pipeline_id = ${p}.id))`;
}

/** The stored pipeline as read: everything comes from the tables in one snapshot. */
export const STORED_PIPELINE_JSON = pipelineJson('p', {
  stages: 'stages',
  context: 'context_items',
  keywords: 'pipeline_keywords',
  logsJoin: storedLogsJoin,
  logs: () => `coalesce(lg.logs, '[]'::json)`,
  logsTruncated: () => `coalesce(lg.truncated, false)`,
  // The lease holder and timings the dashboard's stage graph shows: one primary-key probe a stage.
  executionJoin: (s) => `LEFT JOIN stage_executions ex ON ex.id = ${s}.current_execution_id`,
  // pipelines_rerun_of_idx (partial: only reruns have an entry), newest RERUNS_SHOWN.
  reruns: (p) => `coalesce((SELECT json_agg(r.id ORDER BY r.id DESC) FROM (
    SELECT id FROM pipelines WHERE rerun_of = ${p}.id ORDER BY id DESC LIMIT ${RERUNS_SHOWN}) r), '[]'::json)`,
});

type Json<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };
type StageJson = Omit<Json<StageRecord>, 'logs'> & { logs: Json<StageLogRecord>[] };
export type PipelineJson = Omit<Json<PipelineRecord>, 'stages'> & { stages: StageJson[] };

const at = (v: string): Date => new Date(v);
const atOrNull = (v: string | null): Date | null => (v === null ? null : new Date(v));

export function stageRecord(s: StageJson): StageRecord {
  return {
    ...s,
    createdAt: at(s.createdAt),
    finishedAt: atOrNull(s.finishedAt),
    startedAt: atOrNull(s.startedAt),
    nextRetryAt: atOrNull(s.nextRetryAt),
    lastFailedAt: atOrNull(s.lastFailedAt),
    attemptStartedAt: atOrNull(s.attemptStartedAt),
    attemptEndedAt: atOrNull(s.attemptEndedAt),
    logs: s.logs.map((l) => ({ ...l, created: at(l.created) })),
  };
}

/** The JSON built by `pipelineJson` (parsed, or as text from a driver that leaves json alone). */
export function pipelineRecord(value: PipelineJson | string): PipelineRecord {
  const p: PipelineJson = typeof value === 'string' ? (JSON.parse(value) as PipelineJson) : value;
  return {
    ...p,
    createdAt: at(p.createdAt),
    finishedAt: atOrNull(p.finishedAt),
    stages: p.stages.map(stageRecord),
  };
}
