import { newSpanId, type NewPipeline, type NewStage, type PipelineStatus } from '@po/domain';
import type { DbOrTx } from '@po/db';
import { jsonParam, statement, type Queryable } from '@po/db';
import {
  pipelineJson,
  pipelineRecord,
  stageJson,
  stageRecord,
  type PipelineJson,
  type PipelineRecord,
  type StageRecord,
} from '@po/db';

/**
 * Pipeline creation in ONE statement (decision 0070): the idempotency binding, the pipeline, its
 * stages, context and keywords are data-modifying CTEs of a single INSERT, and the response is
 * built from the rows it returned. One round trip, no transaction to open, nothing to re-read.
 */

/**
 * Ids drawn from `sequence` for the items of a json array parameter, paired with the items in
 * order: whatever order PostgreSQL evaluates nextval in, ids increase with position.
 * Nothing is drawn when the pipeline was not inserted (the key was already bound).
 */
const reserveIds = (sequence: string, items: string) => `
  SELECT id, row_number() OVER (ORDER BY id) AS ord
  FROM (SELECT nextval('${sequence}') AS id FROM generate_series(1, jsonb_array_length(${items}::jsonb))
        WHERE EXISTS (SELECT 1 FROM pipeline)) reserved`;

/** The items of a json array parameter with their 1-based ordinal, joined to their reserved ids. */
const itemsWithIds = (items: string, ids: string) =>
  `pipeline, jsonb_array_elements(${items}::jsonb) WITH ORDINALITY AS d(v, ord) JOIN ${ids} i ON i.ord = d.ord`;

/**
 * The one INSERT of new stages, context items and keywords: the creation statement below (POST
 * /pipelines, rerun, a manual trigger), appends, and the scheduler's set-based write of a whole
 * batch of pipelines (schedule-fire.ts) all insert their rows through these. `item` is the row's
 * json (stageItem's fields for a stage, a context item's, a keyword's); every other argument is an
 * SQL expression over `from`.
 */
interface RowsFrom {
  from: string;
  id: string;
  pipelineId: string;
  item: string;
  returning: string;
}

export const insertStageRows = (a: RowsFrom & { applicationId: string; position: string; spanId: string; now: string }) => `
  INSERT INTO stages (id, pipeline_id, application_id, position, name, handler_name, description, input,
                      options, concurrency_key, priority, policies, is_event, span_id, created_at)
  SELECT ${a.id}, ${a.pipelineId}, ${a.applicationId}, ${a.position}, ${a.item}->>'name',
         ${a.item}->>'handlerName', ${a.item}->>'description', ${a.item}->>'input', ${a.item}->'options',
         ${a.item}->'options'->>'concurrencyKey', coalesce((${a.item}->'options'->>'priority')::smallint, 3),
         nullif(${a.item}->'policies', 'null'::jsonb), (${a.item}->>'isEvent')::boolean, ${a.spanId}, ${a.now}::timestamptz
  FROM ${a.from}
  RETURNING ${a.returning}`;

/** `value`: the item's own value unless given (a rerun copies sensitive ones). */
export const insertContextRows = (a: RowsFrom & { value?: string; now: string }) => `
  INSERT INTO context_items (id, pipeline_id, key, value, value_type, is_sensitive, updated_at)
  SELECT ${a.id}, ${a.pipelineId}, ${a.item}->>'key', ${a.value ?? `${a.item}->>'value'`},
         ${a.item}->>'valueType', (${a.item}->>'isSensitive')::boolean, ${a.now}::timestamptz
  FROM ${a.from}
  RETURNING ${a.returning}`;

export const insertKeywordRows = (a: RowsFrom) => `
  INSERT INTO pipeline_keywords (id, pipeline_id, key, value)
  SELECT ${a.id}, ${a.pipelineId}, ${a.item}->>'key', ${a.item}->>'value'
  FROM ${a.from}
  RETURNING ${a.returning}`;

/**
 * Inserts the stages of json array `items` (see stageItem) into the `pipeline` CTE's pipeline from
 * `firstPosition` on, with the ids reserved by a `stage_ids` CTE; returns the new rows.
 */
const insertStages = (a: { items: string; firstPosition: string; now: string }) =>
  insertStageRows({
    from: itemsWithIds(a.items, 'stage_ids'),
    id: 'i.id',
    pipelineId: 'pipeline.id',
    applicationId: 'pipeline.application_id',
    position: `${a.firstPosition} + d.ord - 1`,
    item: 'd.v',
    spanId: "d.v->>'spanId'",
    now: a.now,
    returning: '*',
  });

/** A stage just inserted has no logs. */
const noLogs = () => `'[]'::json`;

/**
 * $1 application id, $2 name, $3 trace id, $4 policies (json text or null), $5 idempotency key
 * (or null), $6 intent hash (null: no binding), $7 schedule id (or null), $8 now, $9 stages,
 * $10 context items, $11 keywords (json arrays), $12 the pipeline this one reruns (or null), $13
 * its priority.
 *
 * A context item marked `copy` (a rerun's sensitive item) takes its value from the same key of
 * pipeline $12, inside this statement: the value never leaves the database (decision 0089).
 *
 * With an intent hash the key is bound first (ON CONFLICT DO NOTHING): when it already was, or a
 * concurrent request bound it first (this statement waits for that one to commit), nothing else is
 * inserted and no row is returned.
 */
const CREATE_TEXT = `
WITH reserved AS MATERIALIZED (
  SELECT nextval('pipelines_id_seq') AS id
), bound AS (
  INSERT INTO idempotency_keys (application_id, key, pipeline_id, intent_hash, created_at)
  SELECT $1::int, $5::text, reserved.id, $6::text, $8::timestamptz FROM reserved WHERE $6::text IS NOT NULL
  ON CONFLICT (application_id, key) DO NOTHING
  RETURNING pipeline_id
), pipeline AS (
  INSERT INTO pipelines (id, application_id, name, trace_id, policies, idempotency_key, schedule_id,
                         created_at, updated_at, dispatch_requested_at, rerun_of, priority)
  SELECT reserved.id, $1::int, $2::text, $3::text, $4::jsonb, $5::text, $7::bigint,
         $8::timestamptz, $8::timestamptz, $8::timestamptz, $12::bigint, $13::smallint
  FROM reserved WHERE $6::text IS NULL OR EXISTS (SELECT 1 FROM bound)
  RETURNING *
), stage_ids AS MATERIALIZED (${reserveIds('stages_id_seq', '$9')}
), new_stages AS (${insertStages({ items: '$9', firstPosition: '0', now: '$8' })}
), context_ids AS MATERIALIZED (${reserveIds('context_items_id_seq', '$10')}
), new_context AS (${insertContextRows({
  from: itemsWithIds('$10', 'context_ids'),
  id: 'i.id',
  pipelineId: 'pipeline.id',
  item: 'd.v',
  value: `CASE WHEN (d.v->>'copy')::boolean IS TRUE
              THEN (SELECT o.value FROM context_items o WHERE o.pipeline_id = $12::bigint AND o.key = d.v->>'key')
              ELSE d.v->>'value' END`,
  now: '$8',
  returning: '*',
})}
), keyword_ids AS MATERIALIZED (${reserveIds('pipeline_keywords_id_seq', '$11')}
), new_keywords AS (${insertKeywordRows({ from: itemsWithIds('$11', 'keyword_ids'), id: 'i.id', pipelineId: 'pipeline.id', item: 'd.v', returning: '*' })}
)
SELECT p.id, ${pipelineJson('p', { stages: 'new_stages', context: 'new_context', keywords: 'new_keywords', logs: noLogs })} AS pipeline
FROM pipeline p`;

const CREATE = statement('pipeline_create', CREATE_TEXT);

/** A new stage's columns as written (a fresh span id each): creation, append, a worker's append. */
export const stageItem = (s: NewStage) => ({
  name: s.name,
  handlerName: s.handlerName,
  description: s.description,
  input: s.input,
  options: s.options,
  policies: s.policies,
  isEvent: s.isEvent,
  spanId: newSpanId(),
});

/**
 * A rerun: the pipeline it reruns, whose sensitive context values its own sensitive items take
 * (the statement copies them; the values given for those items are not used).
 */
export interface RerunOrigin {
  rerunOf: number;
}

function creationValues(p: NewPipeline, now: Date, intentHash: string | null, rerun: RerunOrigin | null = null): unknown[] {
  if (intentHash !== null && p.idempotencyKey === null) throw new Error('an intent hash needs an idempotency key');
  // Context keys are unique per pipeline: a repeated key keeps its last value (decision 0008),
  // at the place of its first occurrence.
  const context = [...new Map(p.contextItems.map((c) => [c.key, c])).values()].map((c) =>
    rerun && c.isSensitive ? { key: c.key, valueType: c.valueType, isSensitive: true, copy: true } : c,
  );
  return [
    p.applicationId,
    p.name,
    p.traceId,
    p.policies === null ? null : jsonParam(p.policies),
    p.idempotencyKey,
    intentHash,
    p.scheduleId,
    now.toISOString(),
    jsonParam(p.stages.map(stageItem)),
    jsonParam(context),
    jsonParam(p.keywords),
    rerun?.rerunOf ?? null,
    p.priority,
  ];
}

interface CreatedRow {
  id: string | bigint | number;
  pipeline: PipelineJson | string;
}

/**
 * Creates a pipeline due for its first dispatcher pass, in one autocommitted statement (or in the
 * caller's transaction when `db` is one). With `intentHash`, the pipeline's idempotency key is
 * bound to it first; null means the key was bound before (or concurrently) and nothing was
 * created: resolve it with readPipelineByKey. With `rerun`, the pipeline names its original, and
 * its sensitive context items copy that pipeline's values (the caller holds the original's row
 * lock, so they are there).
 */
export async function createPipeline(
  db: Queryable,
  p: NewPipeline,
  now: Date,
  intentHash: string | null = null,
  rerun: RerunOrigin | null = null,
): Promise<PipelineRecord | null> {
  const [row] = await db.query<CreatedRow>(CREATE, creationValues(p, now, intentHash, rerun));
  return row ? pipelineRecord(row.pipeline) : null;
}

/**
 * The same creation statement inside a Prisma transaction (test seeds). No binding:
 * `idempotencyKey` is only stored on the pipeline.
 */
export async function insertPipeline(tx: DbOrTx, p: NewPipeline, now: Date): Promise<number> {
  const rows = await tx.$queryRawUnsafe<CreatedRow[]>(CREATE.text, ...creationValues(p, now, null));
  const row = rows[0];
  if (!row) throw new Error('pipeline creation inserted nothing');
  return Number(row.id);
}

const APPEND = statement(
  'pipeline_append_stages',
  `WITH pipeline AS (
     -- requestDispatch's expression (decision 0031): the earliest request wins.
     UPDATE pipelines SET dispatch_requested_at = LEAST(COALESCE(dispatch_requested_at, $3::timestamptz), $3::timestamptz)
     WHERE id = $1::bigint
     RETURNING id, application_id
   ), stage_ids AS MATERIALIZED (${reserveIds('stages_id_seq', '$2')}
   ), new_stages AS (${insertStages({ items: '$2', firstPosition: '$4::int', now: '$3' })}
   )
   SELECT coalesce(json_agg(${stageJson('s', noLogs())} ORDER BY s.position), '[]'::json) AS stages FROM new_stages s`,
);
const LOCK = statement(
  'pipeline_lock_for_append',
  `SELECT application_id, status::text AS status, priority FROM pipelines WHERE id = $1::bigint FOR UPDATE`,
);
// A statement of its own after the lock: its snapshot then sees every append committed before
// (a subquery of the locking statement would read the snapshot taken before the lock wait).
const STAGE_NAMES = statement(
  'pipeline_stage_names',
  `SELECT name FROM stages WHERE pipeline_id = $1::bigint ORDER BY position`,
);

/** Locks the pipeline row for the rest of the caller's transaction (appends serialise on it). */
export async function lockPipelineRow(
  tx: Queryable,
  pipelineId: number,
): Promise<{ applicationId: number; status: PipelineStatus; priority: number } | null> {
  const [row] = await tx.query<{ application_id: number; status: PipelineStatus; priority: number }>(LOCK, [pipelineId]);
  return row ? { applicationId: row.application_id, status: row.status, priority: row.priority } : null;
}

/** Stage names in position order; read after lockPipelineRow. */
export async function stageNamesInOrder(tx: Queryable, pipelineId: number): Promise<string[]> {
  return (await tx.query<{ name: string }>(STAGE_NAMES, [pipelineId])).map((r) => r.name);
}

/**
 * Appends stages at `firstPosition` with the creation's stage insert (the caller holds the row
 * lock) and marks the pipeline as needing a dispatcher pass (decision 0031), in one statement;
 * returns the new rows.
 */
export async function appendPipelineStages(
  tx: Queryable,
  pipelineId: number,
  firstPosition: number,
  stages: readonly NewStage[],
  now: Date,
): Promise<StageRecord[]> {
  const values = [pipelineId, jsonParam(stages.map(stageItem)), now.toISOString(), firstPosition];
  const [row] = await tx.query<{ stages: PipelineJson['stages'] }>(APPEND, values);
  return (row?.stages ?? []).map(stageRecord);
}
