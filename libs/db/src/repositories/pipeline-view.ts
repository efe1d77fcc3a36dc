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
  logs: StageLogRecord[];
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
}

/** The JSON object of stage row `s`; `logs` is an SQL expression of its json array of logs. */
export function stageJson(s: string, logs: string): string {
  return `json_build_object(
    'id', ${s}.id, 'pipelineId', ${s}.pipeline_id, 'position', ${s}.position, 'spanId', ${s}.span_id,
    'name', ${s}.name, 'handlerName', ${s}.handler_name, 'description', ${s}.description,
    'status', ${s}.status, 'createdAt', ${s}.created_at, 'finishedAt', ${s}.finished_at,
    'startedAt', ${s}.started_at, 'nextRetryAt', ${s}.next_retry_at, 'output', ${s}.output,
    'input', ${s}.input, 'isEvent', ${s}.is_event, 'options', ${s}.options,
    'failureCount', ${s}.failure_count, 'lastFailedAt', ${s}.last_failed_at, 'attempt', ${s}.attempt,
    'retryAttempt', ${s}.retry_attempt, 'lastErrorCode', ${s}.last_error_code,
    'failureDisposition', ${s}.failure_disposition, 'logs', ${logs})`;
}

/** The logs of stage row `s`, ordered by created then id (addendum §4). */
const storedLogs = (s: string): string => `(
  SELECT coalesce(json_agg(json_build_object(
           'id', l.id, 'stageId', l.stage_id, 'message', l.message, 'logLevel', l.log_level, 'created', l.created)
           ORDER BY l.created, l.id), '[]'::json)
  FROM stage_logs l WHERE l.stage_id = ${s}.id)`;

/**
 * The JSON object of pipeline row `p`. `rows` names where its stages, context items and keywords
 * are read from: the tables for a read, the creation's RETURNING rows for a creation.
 */
export function pipelineJson(
  p: string,
  rows: { stages: string; context: string; keywords: string; logs: (s: string) => string },
): string {
  return `json_build_object(
    'id', ${p}.id, 'applicationId', ${p}.application_id, 'name', ${p}.name, 'traceId', ${p}.trace_id,
    'status', ${p}.status, 'createdAt', ${p}.created_at, 'finishedAt', ${p}.finished_at,
    'idempotencyKey', ${p}.idempotency_key,
    'stages', (SELECT coalesce(json_agg(${stageJson('s', rows.logs('s'))} ORDER BY s.position), '[]'::json)
               FROM ${rows.stages} s WHERE s.pipeline_id = ${p}.id),
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
  logs: storedLogs,
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
