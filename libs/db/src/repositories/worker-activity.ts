import type { DbOrTx } from '../db-types.js';
import type { WorkerStatus } from '../generated/prisma/client.js';

/**
 * Reads of worker activity for applications (GET /workers, GET /workers/{workerId}/events;
 * decision 0040). Everything is scoped by application: another application's worker is absent.
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

/**
 * Workers of an application by (createdAt, id) ascending, after `after` when given; `take` rows.
 * The current session is the newest one without `supersededAt` (a bootstrap supersedes the rest).
 */
export async function listWorkersOfApplication(
  db: DbOrTx,
  applicationId: number,
  query: { after?: WorkerPosition; take: number },
): Promise<WorkerActivityRecord[]> {
  const after = query.after;
  const rows = await db.worker.findMany({
    where: {
      applicationId,
      ...(after
        ? { OR: [{ createdAt: { gt: after.createdAt } }, { createdAt: after.createdAt, id: { gt: after.id } }] }
        : {}),
    },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    take: query.take,
    select: {
      id: true,
      instanceId: true,
      workerName: true,
      handlers: true,
      status: true,
      lastHeartbeatAt: true,
      inFlight: true,
      processed: true,
      failed: true,
      createdAt: true,
      sessions: {
        where: { supersededAt: null },
        orderBy: [{ createdAt: 'desc' }, { tokenHash: 'asc' }],
        take: 1,
        select: { expiresAt: true },
      },
    },
  });
  return rows.map(({ sessions, ...worker }) => ({ ...worker, sessionExpiresAt: sessions[0]?.expiresAt ?? null }));
}

/** True when the worker exists and belongs to the application. */
export async function workerBelongsTo(db: DbOrTx, applicationId: number, workerId: string): Promise<boolean> {
  const row = await db.worker.findFirst({ where: { id: workerId, applicationId }, select: { id: true } });
  return row !== null;
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

/** Events of one worker of an application, newest recorded first (id descending), before `beforeId`. */
export async function listWorkerEventsOf(
  db: DbOrTx,
  applicationId: number,
  workerId: string,
  query: { beforeId?: number; take: number },
): Promise<WorkerEventRecordRow[]> {
  const rows = await db.workerEvent.findMany({
    where: {
      workerId,
      applicationId,
      ...(query.beforeId !== undefined ? { id: { lt: BigInt(query.beforeId) } } : {}),
    },
    orderBy: { id: 'desc' },
    take: query.take,
    select: { id: true, kind: true, at: true, message: true, stageId: true, pipelineId: true, data: true },
  });
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind,
    at: r.at,
    message: r.message,
    stageId: r.stageId === null ? null : Number(r.stageId),
    pipelineId: r.pipelineId === null ? null : Number(r.pipelineId),
    data: r.data,
  }));
}
