import type { WorkerStatus } from '../generated/prisma/client.js';
import { statement, type Queryable } from '../sql.js';

/**
 * Reads of worker activity for applications (GET /workers, GET /workers/{workerId}/events;
 * decision 0040). Everything is scoped by application: another application's worker is absent.
 * Each read is one statement, so a worker and its session or events are read at one moment.
 */

export interface WorkerActivityRecord {
  id: string;
  instanceId: string;
  workerName: string | null;
  handlers: string[];
  status: WorkerStatus;
  lastHeartbeatAt: Date | null;
  inFlight: number | null;
  processed: number | null;
  failed: number | null;
  /** Expiry of the current (not superseded) session, past or future; null when there is none. */
  sessionExpiresAt: Date | null;
  createdAt: Date;
}

/** Keyset position in the worker listing: (createdAt, id) of the last item of a page. */
export interface WorkerPosition {
  createdAt: Date;
  id: string;
}

const WORKERS = statement(
  'worker_activity_list',
  `SELECT w.id, w.instance_id, w.worker_name, w.handlers, w.status::text AS status, w.last_heartbeat_at,
          w.in_flight, w.processed, w.failed, w.created_at, s.expires_at AS session_expires_at
   FROM workers w
   LEFT JOIN LATERAL (
     SELECT expires_at FROM worker_sessions ws
     WHERE ws.worker_id = w.id AND ws.superseded_at IS NULL
     ORDER BY ws.created_at DESC, ws.token_hash ASC LIMIT 1) s ON true
   WHERE w.application_id = $1::int
     AND ($2::timestamptz IS NULL OR (w.created_at, w.id) > ($2::timestamptz, $3::text))
   ORDER BY w.created_at, w.id
   LIMIT $4::int`,
);

interface RawWorker {
  id: string;
  instance_id: string;
  worker_name: string | null;
  handlers: string[] | null;
  status: WorkerStatus;
  last_heartbeat_at: Date | null;
  in_flight: number | null;
  processed: number | null;
  failed: number | null;
  created_at: Date;
  session_expires_at: Date | null;
}

/**
 * Workers of an application by (createdAt, id) ascending, after `after` when given; `take` rows.
 * The current session is the newest one without `supersededAt` (a bootstrap supersedes the rest).
 */
export async function listWorkersOfApplication(
  db: Queryable,
  applicationId: number,
  query: { after?: WorkerPosition; take: number },
): Promise<WorkerActivityRecord[]> {
  const after = query.after;
  const rows = await db.query<RawWorker>(WORKERS, [applicationId, after?.createdAt ?? null, after?.id ?? null, query.take]);
  return rows.map((r) => ({
    id: r.id,
    instanceId: r.instance_id,
    workerName: r.worker_name,
    handlers: r.handlers ?? [],
    status: r.status,
    lastHeartbeatAt: r.last_heartbeat_at,
    inFlight: r.in_flight,
    processed: r.processed,
    failed: r.failed,
    sessionExpiresAt: r.session_expires_at,
    createdAt: r.created_at,
  }));
}

export interface WorkerEventRecordRow {
  id: number;
  kind: string;
  at: Date;
  message: string | null;
  stageId: number | null;
  pipelineId: number | null;
  data: unknown;
}

const EVENTS = statement(
  'worker_activity_events',
  `SELECT e.id, e.kind, e.at, e.message, e.stage_id, e.pipeline_id, e.data
   FROM workers w
   LEFT JOIN LATERAL (
     SELECT id, kind, at, message, stage_id, pipeline_id, data FROM worker_events ev
     WHERE ev.worker_id = w.id AND ev.application_id = $1::int AND ($3::bigint IS NULL OR ev.id < $3::bigint)
     ORDER BY ev.id DESC LIMIT $4::int) e ON true
   WHERE w.id = $2::text AND w.application_id = $1::int`,
);

interface RawEvent {
  /** int8 as text (pg); null on the one row of a worker without events. */
  id: string | null;
  kind: string;
  at: Date;
  message: string | null;
  stage_id: string | null;
  pipeline_id: string | null;
  data: unknown;
}

/**
 * Events of one worker of an application, newest recorded first (id descending), before
 * `beforeId`; null when the application has no such worker.
 */
export async function workerEventsOf(
  db: Queryable,
  applicationId: number,
  workerId: string,
  query: { beforeId?: number; take: number },
): Promise<WorkerEventRecordRow[] | null> {
  const rows = await db.query<RawEvent>(EVENTS, [applicationId, workerId, query.beforeId ?? null, query.take]);
  if (rows.length === 0) return null;
  return rows.flatMap((r) =>
    r.id === null
      ? []
      : [
          {
            id: Number(r.id),
            kind: r.kind,
            at: r.at,
            message: r.message,
            stageId: r.stage_id === null ? null : Number(r.stage_id),
            pipelineId: r.pipeline_id === null ? null : Number(r.pipeline_id),
            data: r.data,
          },
        ],
  );
}
