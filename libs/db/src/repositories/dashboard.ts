import type { PipelineStatus } from '@po/domain';
import { statement, type Queryable } from '../sql.js';

/**
 * Reads behind the dashboard's overview and fleet feed (issue 13, decision 0093). Each is one
 * statement scoped by application, and each reads indexes whose matching entries follow what the
 * answer counts (the last hour, the live pipelines, the handlers), never the whole history: see
 * migration 20261125100000_dashboard.
 */

/** The pipeline statuses the overview counts: those of pipelines not yet finished. */
export const LIVE_PIPELINE_STATUSES = ['NotStarted', 'Pending', 'Running', 'Paused'] as const satisfies readonly PipelineStatus[];

/** At most this many handlers (by name) get a queue depth in the overview. */
export const OVERVIEW_HANDLERS_MAX = 200;

export interface OverviewCounts {
  /** Per bucket index (0 = oldest), finished stages and pipelines by outcome. */
  buckets: Map<number, { stagesCompleted: number; stagesFailed: number; pipelinesCompleted: number; pipelinesFailed: number }>;
  pipelinesByStatus: Record<(typeof LIVE_PIPELINE_STATUSES)[number], number>;
  /** The application's handler names, ascending (at most OVERVIEW_HANDLERS_MAX). */
  handlers: string[];
}

// Finished stages and pipelines by bucket come from the partial (application_id, finished_at)
// INCLUDE (status) indexes, index-only; the live pipelines from (application_id, status, …); the
// handlers from (application_id, handler_name, pipeline_id), one probe per distinct name.
const OVERVIEW = statement(
  'dashboard_overview',
  `SELECT
     (SELECT coalesce(json_agg(json_build_object('b', b, 'status', status, 'n', n)), '[]'::json) FROM (
        SELECT floor(extract(epoch FROM s.finished_at - $2::timestamptz) / $4::int)::int AS b, s.status::text AS status, count(*)::int AS n
        FROM stages s
        WHERE s.application_id = $1::int AND s.status IN ('Completed', 'Failed')
          AND s.finished_at >= $2::timestamptz AND s.finished_at < $3::timestamptz
        GROUP BY 1, 2) st) AS stages,
     (SELECT coalesce(json_agg(json_build_object('b', b, 'status', status, 'n', n)), '[]'::json) FROM (
        SELECT floor(extract(epoch FROM p.finished_at - $2::timestamptz) / $4::int)::int AS b, p.status::text AS status, count(*)::int AS n
        FROM pipelines p
        WHERE p.application_id = $1::int AND p.status IN ('Completed', 'Failed')
          AND p.finished_at >= $2::timestamptz AND p.finished_at < $3::timestamptz
        GROUP BY 1, 2) pt) AS pipelines,
     (SELECT coalesce(json_object_agg(status, n), '{}'::json) FROM (
        SELECT p.status::text AS status, count(*)::int AS n
        FROM pipelines p
        WHERE p.application_id = $1::int AND p.status IN ('NotStarted', 'Pending', 'Running', 'Paused')
        GROUP BY 1) lt) AS live,
     (WITH RECURSIVE h(name) AS (
        (SELECT s.handler_name FROM stages s WHERE s.application_id = $1::int ORDER BY s.handler_name LIMIT 1)
        UNION ALL
        SELECT (SELECT s.handler_name FROM stages s WHERE s.application_id = $1::int AND s.handler_name > h.name
                ORDER BY s.handler_name LIMIT 1)
        FROM h WHERE h.name IS NOT NULL)
      SELECT coalesce(json_agg(name), '[]'::json) FROM (SELECT name FROM h WHERE name IS NOT NULL LIMIT $5::int) hn) AS handlers`,
);

interface RawOverview {
  stages: { b: number; status: 'Completed' | 'Failed'; n: number }[];
  pipelines: { b: number; status: 'Completed' | 'Failed'; n: number }[];
  live: Record<string, number>;
  handlers: string[];
}

/**
 * What the overview counts for an application: stages and pipelines that finished in
 * [from, to) by `bucketSeconds` bucket and outcome, live pipelines by status, and its handlers.
 */
export async function readOverviewCounts(
  db: Queryable,
  applicationId: number,
  window: { from: Date; to: Date; bucketSeconds: number },
): Promise<OverviewCounts> {
  const [row] = await db.query<RawOverview>(OVERVIEW, [applicationId, window.from, window.to, window.bucketSeconds, OVERVIEW_HANDLERS_MAX]);
  const buckets: OverviewCounts['buckets'] = new Map();
  const bucket = (b: number) => {
    let entry = buckets.get(b);
    if (!entry) buckets.set(b, (entry = { stagesCompleted: 0, stagesFailed: 0, pipelinesCompleted: 0, pipelinesFailed: 0 }));
    return entry;
  };
  for (const r of row?.stages ?? []) bucket(r.b)[r.status === 'Completed' ? 'stagesCompleted' : 'stagesFailed'] += r.n;
  for (const r of row?.pipelines ?? []) bucket(r.b)[r.status === 'Completed' ? 'pipelinesCompleted' : 'pipelinesFailed'] += r.n;
  const live = row?.live ?? {};
  return {
    buckets,
    pipelinesByStatus: Object.fromEntries(LIVE_PIPELINE_STATUSES.map((s) => [s, live[s] ?? 0])) as OverviewCounts['pipelinesByStatus'],
    handlers: row?.handlers ?? [],
  };
}

export interface FleetEventRow {
  id: number;
  workerId: string;
  workerName: string | null;
  kind: string;
  at: Date;
  message: string | null;
  stageId: number | null;
  pipelineId: number | null;
  data: unknown;
}

// The row comparison is a condition only (application_id, id) can serve: with `id < $2` alone the
// generic plan walked the primary key backwards and filtered by application, which for a quiet
// application beside a busy one read every newer event of the table (0.5 s at 500,000 events).
const FLEET_EVENTS = statement(
  'dashboard_fleet_events',
  `SELECT e.id, e.worker_id, w.worker_name, e.kind, e.at, e.message, e.stage_id, e.pipeline_id, e.data
   FROM worker_events e JOIN workers w ON w.id = e.worker_id
   WHERE e.application_id = $1::int AND (e.application_id, e.id) < ($1::int, coalesce($2::bigint, 9223372036854775807))
   ORDER BY e.application_id DESC, e.id DESC
   LIMIT $3::int`,
);

interface RawFleetEvent {
  id: string;
  worker_id: string;
  worker_name: string | null;
  kind: string;
  at: Date;
  message: string | null;
  stage_id: string | null;
  pipeline_id: string | null;
  data: unknown;
}

/** Events of every worker of an application, newest recorded first (id descending), before `beforeId`. */
export async function fleetEventsOf(db: Queryable, applicationId: number, query: { beforeId?: number; take: number }): Promise<FleetEventRow[]> {
  const rows = await db.query<RawFleetEvent>(FLEET_EVENTS, [applicationId, query.beforeId ?? null, query.take]);
  return rows.map((r) => ({
    id: Number(r.id),
    workerId: r.worker_id,
    workerName: r.worker_name,
    kind: r.kind,
    at: r.at,
    message: r.message,
    stageId: r.stage_id === null ? null : Number(r.stage_id),
    pipelineId: r.pipeline_id === null ? null : Number(r.pipeline_id),
    data: r.data,
  }));
}
