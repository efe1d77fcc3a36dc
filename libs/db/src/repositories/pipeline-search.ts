import type { PipelineStatus, StageStatus } from '@po/domain';
import { statement, type Queryable, type Sql, type Statement } from '../sql.js';

/**
 * GET /pipelines (decision 0089): an application's pipelines newest first, (created_at, id)
 * descending, filtered, one keyset page at a time (migration 20261124130000_pipeline_search).
 *
 * Two ways to read a page, and a measurement that chooses between them:
 *
 * - **Walk**: an index in newest-first order — pipelines (application_id, created_at, id), or
 *   (application_id, status, created_at, id) for one status, (schedule_id, created_at, id) for a
 *   schedule — checking each pipeline against the other filters (a keyword or a stage handler is
 *   one index probe) until the page is full. It reads about `take / selectivity` pipelines: right
 *   for filters that match many.
 * - **Drive**: read every match of one rare filter from its own index — a name prefix is a range
 *   of (application_id, lower(name), …), a keyword of pipeline_keywords (key, value, pipeline_id),
 *   a handler of stages (application_id, handler_name, pipeline_id) — check each against the other
 *   filters and sort those few.
 *
 * PostgreSQL's planner chooses between them from its row estimates, and a LIMIT walk is where a
 * wrong estimate hurts most: a prefix estimated at 4,700 pipelines that matched 35 walked the whole
 * million (1.3 s, found by e2e/bench/search.mjs). So the rare side is measured, not estimated: one
 * statement counts each drivable filter's matches up to DRIVER_CAP + 1 (an index range, at most
 * that many entries). The filter with the fewest matches, if at most DRIVER_CAP, drives the page
 * (at most DRIVER_CAP lookups whatever the statistics say); otherwise every drivable filter matches
 * more than DRIVER_CAP pipelines and the planner plans the page as it sees fit (a walk, normally).
 */

/** What GET /pipelines filters by, and a bulk operation matches (decision 0133). */
export type PipelineFilter = Omit<PipelineSearch, 'after' | 'take'>;

export interface PipelineSearch {
  applicationId: number;
  /** Any of these (distinct); empty: every status. */
  statuses: readonly PipelineStatus[];
  /** Case-insensitive prefix of the name, or null. */
  namePrefix: string | null;
  /** Every one must match: a keyword with that key (value null) or that key and value. */
  keywords: readonly { key: string; value: string | null }[];
  /** Lower-cased schedule name (scheduleNameKey), or null. */
  scheduleNameKey: string | null;
  /** createdAt >= createdAfter (inclusive). */
  createdAfter: Date | null;
  /** createdAt < createdBefore (exclusive). */
  createdBefore: Date | null;
  /** A stage of the pipeline has this handler. */
  stageHandlerName: string | null;
  /** Keyset: only pipelines strictly after this position in newest-first order. */
  after: { createdAt: Date; id: number } | null;
  /** Rows to read (a page and one more, to know whether another page exists). */
  take: number;
}

export interface PipelineSummaryRecord {
  id: number;
  name: string;
  status: PipelineStatus;
  traceId: string;
  createdAt: Date;
  finishedAt: Date | null;
  scheduleName: string | null;
  rerunOf: number | null;
  /** Stages per status; a status without stages is absent. */
  stageCounts: Partial<Record<StageStatus, number>>;
}

/** A filter with at most this many matches drives the page (see above). */
export const DRIVER_CAP = 2000;

/** The filter whose matches are read first: the name prefix, keyword `index`, or the stage handler. */
export type SearchDriver = { kind: 'name' } | { kind: 'keyword'; index: number } | { kind: 'handler' };

/** How a search runs: its schedule resolved to an id, and its driver (null: the planner's choice). */
export interface SearchPlan {
  scheduleId: number | null;
  driver: SearchDriver | null;
}

/** `%`, `_` and the escape character itself match themselves in the prefix (LIKE's default escape is `\`). */
export const likePrefix = (prefix: string): string => prefix.replace(/[\\%_]/g, '\\$&');

/** Statement text built with numbered parameters (each one used: PostgreSQL must infer its type). */
class Params {
  readonly values: unknown[] = [];
  #app: string | undefined;
  constructor(private readonly applicationId: number) {}
  add(value: unknown, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }
  /** The application id, as a parameter added where first used. */
  app(): string {
    this.#app ??= this.add(this.applicationId, 'int');
    return this.#app;
  }
}

// lower() of a constant is folded while planning: the pattern's fixed prefix becomes a range of
// pipelines_search_name_idx (text_pattern_ops).
const nameCondition = (params: Params, prefix: string) => `lower(p.name) LIKE (lower(${params.add(likePrefix(prefix), 'text')}) || '%')`;

function keywordCondition(params: Params, k: { key: string; value: string | null }, alias: string): string {
  const value = k.value === null ? '' : ` AND ${alias}.value = ${params.add(k.value, 'text')}`;
  return `${alias}.key = ${params.add(k.key, 'text')}${value}`;
}

/** The drivable filters of a search, in the order the probe counts them. */
function drivers(search: PipelineSearch): SearchDriver[] {
  return [
    ...(search.namePrefix !== null ? [{ kind: 'name' } as const] : []),
    ...search.keywords.map((_, index) => ({ kind: 'keyword', index }) as const),
    ...(search.stageHandlerName !== null ? [{ kind: 'handler' } as const] : []),
  ];
}

/**
 * The ids of a driver's matches, from its index alone (index-only scans: the name index includes
 * the name the LIKE is rechecked on). Each is ordered as its index is (`USING ~<~`: the name
 * index's text_pattern_ops order), so the planner reads the range and cannot prefer a walk.
 */
function driverIds(params: Params, search: PipelineSearch, driver: SearchDriver, limit?: string): string {
  const cap = limit ? ` LIMIT ${limit}` : '';
  switch (driver.kind) {
    case 'name':
      return `SELECT p.id, p.created_at FROM pipelines p WHERE p.application_id = ${params.app()} AND ${nameCondition(params, search.namePrefix!)}
      ORDER BY lower(p.name) USING ~<~${cap}`;
    case 'keyword':
      return `SELECT k.pipeline_id AS id FROM pipeline_keywords k WHERE ${keywordCondition(params, search.keywords[driver.index]!, 'k')}
      ORDER BY k.key, k.value, k.pipeline_id${cap}`;
    case 'handler':
      return `SELECT s.pipeline_id AS id FROM stages s
      WHERE s.application_id = ${params.app()} AND s.handler_name = ${params.add(search.stageHandlerName, 'text')}
      ORDER BY s.pipeline_id${cap}`;
  }
}

/**
 * The statement that counts each drivable filter's matches, up to DRIVER_CAP + 1 each; null when
 * the search has none. Exported for the plan tests.
 */
export function driverProbeStatement(search: PipelineSearch): { statement: Statement; values: unknown[]; drivers: SearchDriver[] } | null {
  const candidates = drivers(search);
  if (candidates.length === 0) return null;
  const params = new Params(search.applicationId);
  const cap = params.add(DRIVER_CAP + 1, 'int');
  const counts = candidates.map((d) => `(SELECT count(*)::int FROM (${driverIds(params, search, d, cap)}) m)`);
  const text = `SELECT ARRAY[${counts.join(',\n  ')}] AS counts`;
  return { statement: { name: 'pipeline_search_probe', text, custom: true }, values: params.values, drivers: candidates };
}

/**
 * The page statement of a search, planned (`plan`). Exported for the plan tests: what they explain
 * is what runs.
 */
/** The search's filters (not its keyset position) as conditions on pipeline row `p`. */
function filterConditions(params: Params, search: PipelineFilter, scheduleId: number | null): string[] {
  const where = [`p.application_id = ${params.app()}`];
  if (search.statuses.length === 1) where.push(`p.status = ${params.add(search.statuses[0], '"PipelineStatus"')}`);
  else if (search.statuses.length > 1) where.push(`p.status = ANY(${params.add(search.statuses, '"PipelineStatus"[]')})`);
  if (search.namePrefix !== null) where.push(nameCondition(params, search.namePrefix));
  for (const k of search.keywords) {
    where.push(`EXISTS (SELECT 1 FROM pipeline_keywords k WHERE k.pipeline_id = p.id AND ${keywordCondition(params, k, 'k')})`);
  }
  if (scheduleId !== null) where.push(`p.schedule_id = ${params.add(scheduleId, 'bigint')}`);
  if (search.createdAfter !== null) where.push(`p.created_at >= ${params.add(search.createdAfter, 'timestamptz')}`);
  if (search.createdBefore !== null) where.push(`p.created_at < ${params.add(search.createdBefore, 'timestamptz')}`);
  if (search.stageHandlerName !== null) {
    const handler = params.add(search.stageHandlerName, 'text');
    where.push(`EXISTS (SELECT 1 FROM stages s WHERE s.application_id = ${params.app()} AND s.handler_name = ${handler} AND s.pipeline_id = p.id)`);
  }
  return where;
}

/**
 * The ids of every pipeline a filter matches, as a statement's text and values (a bulk operation's
 * match, decision 0133), with `extra` values appended after the filter's as $n+1…: the caller's
 * own parameters. `ids` is `SELECT p.id FROM pipelines p WHERE …`.
 */
export function pipelineMatchSql(filter: PipelineFilter, scheduleId: number | null, extra: readonly unknown[] = []): { ids: string; values: unknown[]; next: number } {
  const params = new Params(filter.applicationId);
  const where = filterConditions(params, filter, scheduleId);
  return { ids: `SELECT p.id FROM pipelines p WHERE ${where.join('\n    AND ')}`, values: [...params.values, ...extra], next: params.values.length + 1 };
}

/** The schedule a filter names, as the search resolves it: its id, null for none, undefined when the application has no such schedule. */
export async function scheduleIdOf(tx: Queryable, applicationId: number, scheduleNameKey: string | null): Promise<number | null | undefined> {
  if (scheduleNameKey === null) return null;
  const [row] = await tx.query<{ id: string }>(SCHEDULE_ID, [applicationId, scheduleNameKey]);
  return row ? Number(row.id) : undefined;
}

export function pipelineSearchStatement(search: PipelineSearch, plan: SearchPlan): { statement: Statement; values: unknown[] } {
  const params = new Params(search.applicationId);
  const where = filterConditions(params, search, plan.scheduleId);
  if (search.after !== null) {
    where.push(`(p.created_at, p.id) < (${params.add(search.after.createdAt, 'timestamptz')}, ${params.add(search.after.id, 'bigint')})`);
  }
  const columns = 'p.id, p.name, p.status, p.trace_id, p.created_at, p.finished_at, p.schedule_id, p.rerun_of';
  const conditions = where.join('\n    AND ');
  // A name prefix's matches come with their (created_at, id) from the index: looked up newest
  // first, the page stops at `take`. A keyword's or a handler's (one row per keyword or stage, so
  // a pipeline may come twice) are all looked up, then sorted.
  const byName = plan.driver?.kind === 'name';
  const driven = plan.driver
    ? // Each match of the driver (the probe counted at most DRIVER_CAP in this snapshot, so the
      // LIMIT cuts nothing) is looked up by id and checked against every filter; OFFSET 0 keeps the
      // lookups one by one, whatever the planner would estimate for the CTE.
      `matches AS MATERIALIZED (
  ${driverIds(params, search, plan.driver, params.add(DRIVER_CAP + 1, 'int'))}
), page AS MATERIALIZED (
  SELECT ${columns}
  FROM ${byName ? '(SELECT id, created_at FROM matches ORDER BY created_at DESC, id DESC)' : '(SELECT DISTINCT id FROM matches)'} m
  CROSS JOIN LATERAL (SELECT ${columns} FROM pipelines p WHERE p.id = m.id AND ${conditions} OFFSET 0) p
  ORDER BY ${byName ? 'm.created_at DESC, m.id DESC' : 'p.created_at DESC, p.id DESC'}
  LIMIT ${params.add(search.take, 'int')}
)`
    : `page AS MATERIALIZED (
  SELECT ${columns}
  FROM pipelines p
  WHERE ${conditions}
  ORDER BY p.created_at DESC, p.id DESC
  LIMIT ${params.add(search.take, 'int')}
)`;
  const text = `WITH ${driven}
SELECT page.id, page.name, page.status::text AS status, page.trace_id, page.created_at, page.finished_at, page.rerun_of,
       (SELECT sc.name FROM schedules sc WHERE sc.id = page.schedule_id) AS schedule_name,
       (SELECT coalesce(json_object_agg(c.status, c.n), '{}'::json)
        FROM (SELECT st.status, count(*)::int AS n FROM stages st WHERE st.pipeline_id = page.id GROUP BY st.status) c) AS stage_counts
FROM page
ORDER BY page.created_at DESC, page.id DESC`;
  // Planned for its values on every run (a generic plan cannot see how rare a value is); the
  // text varies with the filters given, so it is never prepared by name.
  return { statement: { name: 'pipeline_search', text, custom: true }, values: params.values };
}

const SCHEDULE_ID = statement(
  'pipeline_search_schedule',
  `SELECT id FROM schedules WHERE application_id = $1::int AND name_key = $2::text`,
);
/** Parallel workers cost more to start than any of these pages takes (tens of milliseconds here). */
const NO_PARALLEL = statement(
  'pipeline_search_no_parallel',
  `SELECT set_config('max_parallel_workers_per_gather', '0', true)`,
);

/**
 * How the search runs: its schedule's id, and the driver the probe chose; undefined when it names
 * a schedule the application does not have (no pipelines). Run it in the page's snapshot (a
 * REPEATABLE READ transaction), so the counts hold for the page.
 */
export async function planPipelineSearch(tx: Queryable, search: PipelineSearch): Promise<SearchPlan | undefined> {
  const scheduleId = await scheduleIdOf(tx, search.applicationId, search.scheduleNameKey);
  if (scheduleId === undefined) return undefined;
  const probe = driverProbeStatement(search);
  if (!probe) return { scheduleId, driver: null };
  const [row] = await tx.query<{ counts: number[] }>(probe.statement, probe.values);
  const counts = row?.counts ?? [];
  let best: number | undefined;
  counts.forEach((n, i) => {
    if (n <= DRIVER_CAP && (best === undefined || n < counts[best]!)) best = i;
  });
  return { scheduleId, driver: best === undefined ? null : probe.drivers[best]! };
}

interface Row {
  id: string;
  name: string;
  status: PipelineStatus;
  trace_id: string;
  created_at: Date;
  finished_at: Date | null;
  rerun_of: string | null;
  schedule_name: string | null;
  stage_counts: Partial<Record<StageStatus, number>>;
}

/** One page of a search: at most `take` summaries, newest first; the probe and the page in one snapshot. */
export async function searchPipelines(sql: Sql, search: PipelineSearch): Promise<PipelineSummaryRecord[]> {
  const rows = await sql.transaction(
    async (tx) => {
      await tx.query(NO_PARALLEL);
      const plan = await planPipelineSearch(tx, search);
      if (!plan) return [];
      const { statement: page, values } = pipelineSearchStatement(search, plan);
      return tx.query<Row>(page, values);
    },
    { readOnly: true },
  );
  return rows.map((r) => ({
    id: Number(r.id),
    name: r.name,
    status: r.status,
    traceId: r.trace_id,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
    scheduleName: r.schedule_name,
    rerunOf: r.rerun_of === null ? null : Number(r.rerun_of),
    stageCounts: r.stage_counts,
  }));
}
