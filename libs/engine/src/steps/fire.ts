import type { NewPipeline } from '@po/domain';
import { statement, type Queryable } from '@po/db';
import { insertContextRows, insertKeywordRows, insertStageRows } from './create.js';
import type { NewRun } from '@po/db';
import type { SchedulePlanRecord, SchedulePlanWrite } from '@po/db';

/**
 * The statements of firing schedules (decision 0086), on plain pg (decision 0060): lock a batch of
 * due schedules, read their overlap state, and write fired ticks — pipelines, stages, context
 * items, keywords, runs and advanced plans — in ONE statement. Every firing writes through it:
 * the scheduler's batches and guarded path, Queue promotion, trigger and backfill
 * (schedule-fire-ticks.ts); its rows are inserted as pipeline creation inserts them
 * (pipeline-create.ts).
 */

/** A locked due schedule, with its definition as JSON text when it is small (see lockDueScheduleBatch). */
export interface DueScheduleRow {
  schedule: SchedulePlanRecord;
  /** pg_column_size of the stored definition: its size on disk, compressed or not. Free to read. */
  definitionStoredBytes: number;
  /** The definition as JSON text when it is at most `inlineDefinitionBytes` long, else null. */
  definitionText: string | null;
}

interface LockedRow {
  id: string;
  application_id: number;
  name: string;
  status: SchedulePlanRecord['status'];
  kind: SchedulePlanRecord['kind'];
  cron_expression: string | null;
  time_zone: string;
  interval_seconds: number | null;
  run_at: number | null;
  definition_version: number;
  overlap_policy: string;
  catchup_policy: string;
  catchup_max: number;
  jitter_seconds: number;
  plan_anchor: number;
  next_tick_at: number | null;
  next_run_at: number | null;
  handled_through: number | null;
  created_at: number;
  updated_at: number;
  stored_bytes: number;
  definition_text: string | null;
}

// Instants as epoch milliseconds: a float8 is parsed with parseFloat, a timestamptz with a regular
// expression per value (7 a schedule, noticeable at a thousand schedules a second).
const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8 AS ${column}`;
const toDate = (v: number | null): Date | null => (v === null ? null : new Date(v));

// The definition is rendered as text only when its stored form is small: rendering a large jsonb
// (tens of MB) costs hundreds of milliseconds, and pg_column_size reads no TOAST at all.
const lockText = (due: string) =>
  `SELECT id, application_id, name, status::text AS status, kind::text AS kind, cron_expression, time_zone,
          interval_seconds, ${ms('run_at')}, definition_version, overlap_policy, catchup_policy, catchup_max, jitter_seconds,
          ${ms('plan_anchor')}, ${ms('next_tick_at')}, ${ms('next_run_at')}, ${ms('handled_through')}, ${ms('created_at')}, ${ms('updated_at')},
          pg_column_size(definition) AS stored_bytes,
          CASE WHEN pg_column_size(definition) > $4::int THEN NULL
               WHEN octet_length(definition::text) > $4::int THEN NULL
               ELSE definition::text END AS definition_text
   FROM schedules
   WHERE status = 'Active' AND ${due} AND NOT (id = ANY($3::bigint[]))
   ORDER BY schedules.next_run_at LIMIT $2::int
   FOR UPDATE SKIP LOCKED`;
const LOCK = statement('schedule_fire_lock', lockText('next_run_at <= $1::timestamptz'));
// A batch prepared ahead takes the schedules of its instant only: one due earlier belongs to the
// regular pass, which must not find it held until that instant.
const LOCK_AT = statement('schedule_fire_lock_at', lockText('next_run_at = $1::timestamptz'));

/**
 * Locks up to `limit` Active due schedules (nextRunAt <= now), earliest first, skipping rows
 * another transaction holds (replicas share the work without waiting), as lockDueSchedules does.
 * A definition comes along as text only when it is at most `inlineDefinitionBytes` long, so the
 * batch holds at most limit × inlineDefinitionBytes of them; read a larger one with
 * scheduleDefinitionText, under the same lock. With `exactlyAt`, only the schedules whose
 * nextRunAt is `now` itself (a batch prepared ahead for that instant, decision 0097).
 */
export async function lockDueScheduleBatch(
  tx: Queryable,
  now: Date,
  options: { limit: number; exclude?: readonly number[]; inlineDefinitionBytes: number; exactlyAt?: boolean },
): Promise<DueScheduleRow[]> {
  const rows = await tx.query<LockedRow>(options.exactlyAt ? LOCK_AT : LOCK, [now, options.limit, options.exclude ?? [], options.inlineDefinitionBytes]);
  return rows.map((r) => ({
    schedule: {
      id: Number(r.id),
      applicationId: r.application_id,
      name: r.name,
      status: r.status,
      kind: r.kind,
      cronExpression: r.cron_expression,
      timeZone: r.time_zone,
      intervalSeconds: r.interval_seconds,
      runAt: toDate(r.run_at),
      definitionVersion: r.definition_version,
      overlapPolicy: r.overlap_policy,
      catchupPolicy: r.catchup_policy,
      catchupMax: r.catchup_max,
      jitterSeconds: r.jitter_seconds,
      planAnchor: new Date(r.plan_anchor),
      nextTickAt: toDate(r.next_tick_at),
      nextRunAt: toDate(r.next_run_at),
      handledThrough: toDate(r.handled_through),
      createdAt: new Date(r.created_at),
      updatedAt: new Date(r.updated_at),
    },
    definitionStoredBytes: r.stored_bytes,
    definitionText: r.definition_text,
  }));
}

const DEFINITION = statement('schedule_fire_definition', `SELECT definition::text AS definition FROM schedules WHERE id = $1::bigint`);

/** One schedule's definition as JSON text (read under the batch's row lock, so it is the locked one). */
export async function scheduleDefinitionText(tx: Queryable, scheduleId: number): Promise<string | null> {
  const [row] = await tx.query<{ definition: string }>(DEFINITION, [scheduleId]);
  return row?.definition ?? null;
}

// A statement of its own after the lock: its snapshot then sees every pipeline committed before
// the rows were locked (the locking statement's snapshot is older). Counts, not ids: a batch only
// needs to know whether the schedule overlaps (what Replace cancels, the guarded path reads
// itself), and only where its policy asks: Allow never overlaps, only Queue counts Queued runs.
const OVERLAP = statement(
  'schedule_fire_overlap',
  `SELECT s.id,
          CASE WHEN s.policy = 'Allow' THEN 0 ELSE
            (SELECT count(*) FROM pipelines p
             WHERE p.schedule_id = s.id AND p.status NOT IN ('Completed', 'Failed', 'Cancelled'))::int END AS open,
          CASE WHEN s.policy <> 'Queue' THEN 0 ELSE
            (SELECT count(*) FROM schedule_runs r WHERE r.schedule_id = s.id AND r.status = 'Queued')::int END AS queued
   FROM unnest($1::bigint[], $2::text[]) AS s(id, policy)`,
);

export interface OverlapState {
  /** How many pipelines of the schedule are not terminal (addendum §14.5); 0 under Allow. */
  open: number;
  /** How many runs of the schedule are Queued; 0 unless its policy is Queue. */
  queued: number;
}

/** Per schedule, how many of its pipelines are unfinished and of its runs Queued, as its overlap policy needs, in one statement. */
export async function overlapStates(tx: Queryable, schedules: readonly Pick<SchedulePlanRecord, 'id' | 'overlapPolicy'>[]): Promise<Map<number, OverlapState>> {
  const out = new Map<number, OverlapState>();
  if (schedules.length === 0) return out;
  const rows = await tx.query<{ id: string; open: number; queued: number }>(OVERLAP, [schedules.map((s) => s.id), schedules.map((s) => s.overlapPolicy)]);
  for (const r of rows) out.set(Number(r.id), { open: r.open, queued: r.queued });
  return out;
}

/**
 * JSON text of a parameter, as pipeline-create.ts makes it: a lone surrogate becomes U+FFFD (jsonb
 * refuses its `\ud800` escape, which would fail the whole batch). JSON.stringify writes a lone
 * surrogate, and only a lone one, as a `\udXXX` escape: text without one needs no second pass
 * (a replacer on every value costs ~60 µs per fired schedule).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const jsonParam = (value: unknown): string => {
  const text = JSON.stringify(value);
  if (!text.includes('\\ud')) return text;
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD') : v));
};

/**
 * What every pipeline created from one planned definition shares, as the JSON text the fire
 * statement reads: name, policies, stages (without span ids), context items and keywords. Context
 * keys are unique per pipeline: a repeated key keeps its last value at the place of its first
 * occurrence (decision 0008), as in pipeline creation. Trace id and stage span ids are per
 * pipeline (ScheduledPipeline).
 */
export function pipelineTemplate(p: Pick<NewPipeline, 'name' | 'policies' | 'priority' | 'stages' | 'contextItems' | 'keywords'>): string {
  return jsonParam({
    name: p.name,
    policies: p.policies,
    priority: p.priority,
    stages: p.stages.map((s) => ({
      name: s.name,
      handlerName: s.handlerName,
      description: s.description,
      input: s.input,
      options: s.options,
      policies: s.policies,
      isEvent: s.isEvent,
    })),
    context: [...new Map(p.contextItems.map((c) => [c.key, c])).values()],
    keywords: p.keywords,
  });
}

/** One pipeline to create from a template of the same write. */
export interface ScheduledPipeline {
  applicationId: number;
  scheduleId: number;
  traceId: string;
  /** Index into FireWrite.templates. */
  template: number;
  /** The stages' span ids, 16 hex characters each, concatenated in stage order. */
  spanIds: string;
}

/**
 * A run to record; `pipeline` is the index of its pipeline in FireWrite.pipelines, or null. A
 * Backfill run names its tick in `backfillTick` (its `tick` stays null: schedule-backfill.ts).
 * `replaced`, with a null reason: the index of the pipeline it replaced, which the reason names
 * (`replaced:{id}`, an id this statement draws).
 */
export type FiredRun = Omit<NewRun, 'pipelineId'> & { pipeline: number | null; backfillTick?: Date | null; replaced?: number | null };

export interface FireWrite {
  /** createdAt, updatedAt and dispatchRequestedAt of the pipelines; updatedAt of their context items. */
  now: Date;
  /** pipelineTemplate texts. */
  templates: readonly string[];
  pipelines: readonly ScheduledPipeline[];
  runs: readonly FiredRun[];
  plans: readonly ({ scheduleId: number } & SchedulePlanWrite)[];
}

/**
 * Ids drawn from `sequence`, one per row of CTE `rows`, as an array in id order: element `ord` of
 * it goes to the row numbered `ord`, so ids increase with position whatever order PostgreSQL
 * evaluates nextval in. An array subscript rather than a join on the number keeps the planner's
 * estimates linear (a join of two CTEs on a number it cannot know is unique is estimated as a
 * blow-up, which made the statement expensive enough for JIT compilation, ~1 s).
 */
const reserveIds = (sequence: string, rows: string) => `
  SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids FROM (SELECT nextval('${sequence}') AS id FROM ${rows}) reserved`;

/** An instant given as epoch milliseconds (a float8, or the text of a json number; null stays null). */
const instant = (ms: string) => `to_timestamp((${ms})::float8 / 1000)`;

/**
 * $1 now, $2 templates, $3 pipelines, $4 runs (json arrays; instants as epoch ms), $5..$9 the plans
 * (schedule ids, planAnchor, nextTickAt, nextRunAt, handledThrough as epoch ms): typed arrays, so
 * the planner joins them to schedules by primary key instead of hashing the whole table. Every
 * row's id is reserved by position (pipelines in array order, then their stages, context items
 * and keywords in pipeline-then-item order, runs in array order), so ids increase with position.
 * A run whose (schedule_id, tick) is already taken fails the statement: a tick fires at most once.
 */
const WRITE_TEXT = `
WITH tpl AS MATERIALIZED (
  SELECT (t.ord - 1)::int AS idx, t.v FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(v, ord)
), pin AS MATERIALIZED (
  SELECT d.ord, (d.v->>'applicationId')::int AS application_id, (d.v->>'scheduleId')::bigint AS schedule_id,
         d.v->>'traceId' AS trace_id, (d.v->>'template')::int AS template, d.v->>'spanIds' AS span_ids
  FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS d(v, ord)
), pipeline_ids AS MATERIALIZED (${reserveIds('pipelines_id_seq', 'pin')}
), new_pipelines AS (
  INSERT INTO pipelines (id, application_id, name, trace_id, policies, schedule_id, created_at, updated_at, dispatch_requested_at, priority)
  SELECT (SELECT ids FROM pipeline_ids)[p.ord::int], p.application_id, t.v->>'name', p.trace_id, nullif(t.v->'policies', 'null'::jsonb),
         p.schedule_id, $1::timestamptz, $1::timestamptz, $1::timestamptz, coalesce((t.v->>'priority')::smallint, 3)
  FROM pin p JOIN tpl t ON t.idx = p.template
  RETURNING id
), stage_in AS MATERIALIZED (
  SELECT row_number() OVER (ORDER BY p.ord, s.pos) AS ord, (SELECT ids FROM pipeline_ids)[p.ord::int] AS pipeline_id,
         p.application_id, s.pos, s.v, p.span_ids
  FROM pin p JOIN tpl t ON t.idx = p.template
  CROSS JOIN LATERAL jsonb_array_elements(t.v->'stages') WITH ORDINALITY AS s(v, pos)
), stage_ids AS MATERIALIZED (${reserveIds('stages_id_seq', 'stage_in')}
), new_stages AS (${insertStageRows({
  from: 'stage_in s',
  id: '(SELECT ids FROM stage_ids)[s.ord::int]',
  pipelineId: 's.pipeline_id',
  applicationId: 's.application_id',
  position: 's.pos - 1',
  item: 's.v',
  spanId: 'substr(s.span_ids, (s.pos::int - 1) * 16 + 1, 16)',
  now: '$1',
  returning: 'id',
})}
), context_in AS MATERIALIZED (
  SELECT row_number() OVER (ORDER BY p.ord, c.pos) AS ord, (SELECT ids FROM pipeline_ids)[p.ord::int] AS pipeline_id, c.v
  FROM pin p JOIN tpl t ON t.idx = p.template
  CROSS JOIN LATERAL jsonb_array_elements(t.v->'context') WITH ORDINALITY AS c(v, pos)
), context_ids AS MATERIALIZED (${reserveIds('context_items_id_seq', 'context_in')}
), new_context AS (${insertContextRows({ from: 'context_in c', id: '(SELECT ids FROM context_ids)[c.ord::int]', pipelineId: 'c.pipeline_id', item: 'c.v', now: '$1', returning: 'id' })}
), keyword_in AS MATERIALIZED (
  SELECT row_number() OVER (ORDER BY p.ord, k.pos) AS ord, (SELECT ids FROM pipeline_ids)[p.ord::int] AS pipeline_id, k.v
  FROM pin p JOIN tpl t ON t.idx = p.template
  CROSS JOIN LATERAL jsonb_array_elements(t.v->'keywords') WITH ORDINALITY AS k(v, pos)
), keyword_ids AS MATERIALIZED (${reserveIds('pipeline_keywords_id_seq', 'keyword_in')}
), new_keywords AS (${insertKeywordRows({ from: 'keyword_in k', id: '(SELECT ids FROM keyword_ids)[k.ord::int]', pipelineId: 'k.pipeline_id', item: 'k.v', returning: 'id' })}
), run_in AS MATERIALIZED (
  SELECT r.ord, r.v FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS r(v, ord)
), run_ids AS MATERIALIZED (${reserveIds('schedule_runs_id_seq', 'run_in')}
), new_runs AS (
  INSERT INTO schedule_runs (id, schedule_id, application_id, trigger, status, scheduled_for, tick, backfill_tick, pipeline_id, reason, created_at)
  SELECT (SELECT ids FROM run_ids)[r.ord::int], (r.v->>'scheduleId')::bigint, (r.v->>'applicationId')::int, r.v->>'trigger',
         r.v->>'status', ${instant("r.v->>'scheduledFor'")}, ${instant("r.v->>'tick'")}, ${instant("r.v->>'backfillTick'")},
         (SELECT ids FROM pipeline_ids)[(r.v->>'pipeline')::int + 1],
         coalesce(r.v->>'reason', 'replaced:' || (SELECT ids FROM pipeline_ids)[(r.v->>'replaced')::int + 1]),
         ${instant("r.v->>'createdAt'")}
  FROM run_in r
  RETURNING id
), advanced AS (
  UPDATE schedules AS s
  SET plan_anchor = ${instant('x.anchor')}, next_tick_at = ${instant('x.tick')}, next_run_at = ${instant('x.run')},
      handled_through = ${instant('x.handled')}
  FROM unnest($5::bigint[], $6::float8[], $7::float8[], $8::float8[], $9::float8[]) AS x(id, anchor, tick, run, handled)
  WHERE s.id = x.id
  RETURNING s.id
)
SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM new_pipelines) AS pipeline_ids,
       (SELECT count(*) FROM new_stages)::int AS stages, (SELECT count(*) FROM new_context)::int AS context_items,
       (SELECT count(*) FROM new_keywords)::int AS keywords, (SELECT string_agg(id::text, ',' ORDER BY id) FROM new_runs) AS run_ids,
       (SELECT count(*) FROM advanced)::int AS plans`;

// Prepared once per connection: its only table read is schedules by primary key, and every other
// estimate is the planner's fixed guess for a json array, so planning it per run (~10 ms) buys
// nothing.
const WRITE = statement('schedule_fire_write', WRITE_TEXT);

const epochMs = (d: Date | null) => (d === null ? null : d.getTime());

/**
 * Writes a fired batch in one statement: the pipelines (due for dispatch at once, as every
 * creation), their stages, context items and keywords, the runs (pointing at their pipelines) and
 * the schedules' advanced plans. Returns the new pipelines' ids in the order of `pipelines`.
 */
export async function writeFiredBatch(tx: Queryable, write: FireWrite): Promise<number[]> {
  return (await writeFired(tx, write)).pipelines;
}

/** writeFiredBatch, with the new runs' ids too (in the order of `runs`). */
export async function writeFired(tx: Queryable, write: FireWrite): Promise<{ pipelines: number[]; runs: number[] }> {
  const values = [
    write.now.toISOString(),
    `[${write.templates.join(',')}]`,
    jsonParam(write.pipelines),
    jsonParam(
      write.runs.map((r) => ({
        scheduleId: r.scheduleId,
        applicationId: r.applicationId,
        trigger: r.trigger,
        status: r.status,
        scheduledFor: epochMs(r.scheduledFor),
        tick: epochMs(r.tick),
        backfillTick: epochMs(r.backfillTick ?? null),
        pipeline: r.pipeline,
        reason: r.reason,
        replaced: r.replaced ?? null,
        createdAt: epochMs(r.createdAt),
      })),
    ),
    write.plans.map((p) => p.scheduleId),
    write.plans.map((p) => p.planAnchor.getTime()),
    write.plans.map((p) => epochMs(p.nextTickAt)),
    write.plans.map((p) => epochMs(p.nextRunAt)),
    write.plans.map((p) => epochMs(p.handledThrough)),
  ];
  const [row] = await tx.query<{ pipeline_ids: string | null; run_ids: string | null }>(WRITE, values);
  const idsOf = (list: string | null | undefined) => (list ? list.split(',').map(Number) : []);
  const pipelines = idsOf(row?.pipeline_ids);
  const runs = idsOf(row?.run_ids);
  if (pipelines.length !== write.pipelines.length || runs.length !== write.runs.length) {
    throw new Error(`fire write inserted ${pipelines.length}/${write.pipelines.length} pipelines and ${runs.length}/${write.runs.length} runs`);
  }
  return { pipelines, runs };
}

/**
 * Prepares the fire statements on a connection without changing anything (an empty lock, overlap
 * read and write): a connection's first run of them also loads the catalog entries of six tables
 * and their indexes, tens of milliseconds a statement, which a burst should not wait for.
 */
export async function prepareFireStatements(db: Queryable): Promise<void> {
  await db.query(LOCK, [new Date(0), 0, [], 0]);
  await db.query(LOCK_AT, [new Date(0), 0, [], 0]);
  await db.query(OVERLAP, [[], []]);
  await writeFiredBatch(db, { now: new Date(0), templates: [], pipelines: [], runs: [], plans: [] });
}

const CROWDED = statement(
  'schedule_crowded_instant',
  `SELECT ${ms('next_run_at')}, count(*)::int AS schedules FROM schedules
   WHERE status = 'Active' AND next_run_at >= $1::timestamptz AND next_run_at <= $2::timestamptz
   GROUP BY next_run_at HAVING count(*) >= $3::int
   ORDER BY next_run_at LIMIT 1`,
);

/**
 * The earliest fire instant in [from, to] that at least `minSchedules` Active schedules share (a
 * Cron minute, a burst of Once schedules): worth preparing ahead (decision 0097). Reads the
 * (status, next_run_at) index over the window only.
 */
export async function crowdedFireInstant(q: Queryable, from: Date, to: Date, minSchedules: number): Promise<{ at: Date; schedules: number } | null> {
  const [row] = await q.query<{ next_run_at: number; schedules: number }>(CROWDED, [from, to, minSchedules]);
  return row ? { at: new Date(row.next_run_at), schedules: row.schedules } : null;
}
