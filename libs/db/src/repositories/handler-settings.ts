import { statement, type Queryable } from '../sql.js';

/**
 * Handlers of an application (GET and PUT /handlers; decision 0132): their settings
 * (`handler_settings`, one row per application and handler, absent = not paused, no limits) and
 * what their stages wait for now. Every statement is scoped by the application.
 */

export interface HandlerSettingsChange {
  /** Absent: keep the stored value (false for new settings). */
  paused?: boolean;
  /** Absent: keep; null: no limit. */
  maxConcurrent?: number | null;
  maxPerSecond?: number | null;
}

export interface HandlerSettingsValues {
  paused: boolean;
  maxConcurrent: number | null;
  maxPerSecond: number | null;
}

export interface HandlerSettingsUpsert {
  /** The stored values before the change: the defaults when there were none. */
  before: HandlerSettingsValues;
  after: HandlerSettingsValues;
}

export interface HandlerRecord extends HandlerSettingsValues {
  name: string;
  /** A settings row exists. */
  configured: boolean;
  updatedAt: Date | null;
  throttled: number;
  pending: number;
  running: number;
  /** By the database clock: the oldest Throttled stage's creation or Pending stage's dispatch. */
  oldestWaitingSeconds: number | null;
  /** The pipeline of the handler's oldest Throttled stage (lowest id), if any waits. */
  oldestThrottledPipelineId: number | null;
}

// The stored values, under the row lock the upsert would take anyway: read before it, since a
// lock taken in the upsert's own statement would see the row as that statement leaves it.
const LOCK = statement(
  'handler_settings_lock',
  `SELECT paused, max_concurrent, max_per_second FROM handler_settings
   WHERE application_id = $1::int AND handler_name = $2::text FOR UPDATE`,
);

// A changed rate starts a full bucket: tokens_at NULL is one the engine has not used yet (admission.ts).
const UPSERT = statement(
  'handler_settings_upsert',
  `INSERT INTO handler_settings AS h (application_id, handler_name, paused, max_concurrent, max_per_second, tokens, tokens_at)
   VALUES ($1::int, $2::text, coalesce($3::boolean, false),
           CASE WHEN $4::boolean THEN $5::int END,
           CASE WHEN $6::boolean THEN $7::float8 END,
           0, NULL)
   ON CONFLICT (application_id, handler_name) DO UPDATE SET
     paused = coalesce($3::boolean, h.paused),
     max_concurrent = CASE WHEN $4::boolean THEN $5::int ELSE h.max_concurrent END,
     max_per_second = CASE WHEN $6::boolean THEN $7::float8 ELSE h.max_per_second END,
     tokens = CASE WHEN $6::boolean AND $7::float8 IS DISTINCT FROM h.max_per_second THEN 0 ELSE h.tokens END,
     tokens_at = CASE WHEN $6::boolean AND $7::float8 IS DISTINCT FROM h.max_per_second THEN NULL ELSE h.tokens_at END,
     updated_at = now()
   RETURNING paused, max_concurrent, max_per_second`,
);

interface RawSettings {
  paused: boolean;
  max_concurrent: number | null;
  max_per_second: number | null;
}

const valuesOf = (r: RawSettings): HandlerSettingsValues => ({ paused: r.paused, maxConcurrent: r.max_concurrent, maxPerSecond: r.max_per_second });

/**
 * Creates or changes the settings of a handler; absent members keep their stored values. Run it
 * in a transaction: the stored values are read under the row's lock, which the upsert keeps.
 */
export async function upsertHandlerSettings(tx: Queryable, applicationId: number, handler: string, change: HandlerSettingsChange): Promise<HandlerSettingsUpsert> {
  const [old] = await tx.query<RawSettings>(LOCK, [applicationId, handler]);
  const [row] = await tx.query<RawSettings>(UPSERT, [
    applicationId,
    handler,
    change.paused ?? null,
    change.maxConcurrent !== undefined,
    change.maxConcurrent ?? null,
    change.maxPerSecond !== undefined,
    change.maxPerSecond ?? null,
  ]);
  if (!row) throw new Error('handler_settings upsert returned no row');
  return { before: old ? valuesOf(old) : { paused: false, maxConcurrent: null, maxPerSecond: null }, after: valuesOf(row) };
}

// One statement for the list and for one handler ($2). Throttled stages are counted from
// stages_throttled_order_idx (index-only: handler_name is INCLUDEd) and their oldest is the lowest
// id, read by key; Pending and Running ones from stages_inflight_handler_idx, the Pending ones'
// dispatch from their current execution. The predicates repeat the partial indexes' own.
const HANDLERS = statement(
  'handlers_of_application',
  `WITH throttled AS (
     SELECT handler_name, count(*)::int AS n, min(id) AS oldest_id
     FROM stages
     WHERE application_id = $1::int AND status = 'Throttled' AND ($2::text IS NULL OR handler_name = $2::text)
     GROUP BY handler_name
   ), inflight AS (
     SELECT s.handler_name,
            count(*) FILTER (WHERE s.status = 'Pending')::int AS pending,
            count(*) FILTER (WHERE s.status = 'Running')::int AS running,
            min(e.dispatched_at) AS oldest_dispatched_at
     FROM stages s
     LEFT JOIN stage_executions e ON s.status = 'Pending' AND e.id = s.current_execution_id
     WHERE s.application_id = $1::int AND s.status IN ('Pending', 'Running') AND ($2::text IS NULL OR s.handler_name = $2::text)
     GROUP BY s.handler_name
   ), names AS (
     SELECT handler_name FROM handler_settings WHERE application_id = $1::int AND ($2::text IS NULL OR handler_name = $2::text)
     UNION SELECT handler_name FROM throttled
     UNION SELECT handler_name FROM inflight
     UNION SELECT h FROM workers w CROSS JOIN LATERAL unnest(w.handlers) h
       WHERE w.application_id = $1::int AND w.status = 'Active' AND ($2::text IS NULL OR h = $2::text)
   )
   SELECT n.handler_name AS name, hs.handler_name IS NOT NULL AS configured,
          coalesce(hs.paused, false) AS paused, hs.max_concurrent, hs.max_per_second, hs.updated_at,
          coalesce(t.n, 0) AS throttled, coalesce(i.pending, 0) AS pending, coalesce(i.running, 0) AS running,
          extract(epoch FROM now() - least(ts.created_at, i.oldest_dispatched_at))::float8 AS oldest_waiting_seconds,
          ts.pipeline_id::float8 AS oldest_throttled_pipeline_id
   FROM names n
   LEFT JOIN handler_settings hs ON hs.application_id = $1::int AND hs.handler_name = n.handler_name
   LEFT JOIN throttled t ON t.handler_name = n.handler_name
   LEFT JOIN stages ts ON ts.id = t.oldest_id
   LEFT JOIN inflight i ON i.handler_name = n.handler_name
   ORDER BY n.handler_name COLLATE "C"`,
);

interface RawHandler {
  name: string;
  configured: boolean;
  paused: boolean;
  max_concurrent: number | null;
  max_per_second: number | null;
  updated_at: Date | null;
  throttled: number;
  pending: number;
  running: number;
  oldest_waiting_seconds: number | null;
  oldest_throttled_pipeline_id: number | null;
}

const toRecord = (r: RawHandler): HandlerRecord => ({
  name: r.name,
  configured: r.configured,
  paused: r.paused,
  maxConcurrent: r.max_concurrent,
  maxPerSecond: r.max_per_second,
  updatedAt: r.updated_at,
  throttled: Number(r.throttled),
  pending: Number(r.pending),
  running: Number(r.running),
  // In milliseconds, as the stored times are; a clock step back can make a fresh stage look younger than now: never below 0.
  oldestWaitingSeconds: r.oldest_waiting_seconds === null ? null : Math.max(0, Math.round(Number(r.oldest_waiting_seconds) * 1000) / 1000),
  oldestThrottledPipelineId: r.oldest_throttled_pipeline_id === null ? null : Number(r.oldest_throttled_pipeline_id),
});

/**
 * The application's handlers by name (code point order): those with settings, with Throttled,
 * Pending or Running stages, or registered by an Active worker.
 */
export async function listHandlers(db: Queryable, applicationId: number): Promise<HandlerRecord[]> {
  return (await db.query<RawHandler>(HANDLERS, [applicationId, null])).map(toRecord);
}

/** One handler of the application, or null when nothing names it (see listHandlers). */
export async function findHandler(db: Queryable, applicationId: number, handler: string): Promise<HandlerRecord | null> {
  const [row] = await db.query<RawHandler>(HANDLERS, [applicationId, handler]);
  return row ? toRecord(row) : null;
}
