import {
  formatDateTime,
  formatNullableDateTime,
  type JsonObject,
  type WorkerEventKind,
  type WorkerEventPage,
  type WorkerEventRecord,
  type WorkerPage,
  type WorkerSummary,
} from '@po/contracts';
import { listWorkersOfApplication, workerEventsOf, type WorkerActivityRecord, type WorkerEventRecordRow } from '@po/db';
import { NotFound } from '@po/domain';
import { pageOf, readCursor } from '@po/http';
import type { Deps } from '../deps.js';
import { listingKey } from './cursor.js';

/** Worker activity read by applications (issue item 5; decision 0040). */

export interface PageQuery {
  cursor: string | undefined;
  limit: number;
}

export function workerSummary(w: WorkerActivityRecord): WorkerSummary {
  return {
    workerId: w.id,
    instanceId: w.instanceId,
    workerName: w.workerName,
    handlers: [...w.handlers],
    status: w.status,
    lastHeartbeatAt: formatNullableDateTime(w.lastHeartbeatAt),
    counters: { inFlight: w.inFlight, processed: w.processed, failed: w.failed },
    sessionExpiresAt: formatNullableDateTime(w.sessionExpiresAt),
    createdAt: formatDateTime(w.createdAt),
  };
}

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

export function workerEventRecord(e: WorkerEventRecordRow): WorkerEventRecord {
  return {
    id: e.id,
    // Only validated kinds are stored (POST /workers/events, bootstrap, shutdown).
    kind: e.kind as WorkerEventKind,
    at: formatDateTime(e.at),
    message: e.message,
    stageId: e.stageId,
    pipelineId: e.pipelineId,
    data: isObject(e.data) ? e.data : null,
  };
}

/** GET /workers: the application's workers by (createdAt, workerId) ascending. */
export async function listWorkersPage(deps: Deps, applicationId: number, query: PageQuery): Promise<WorkerPage> {
  const key = listingKey({ kind: 'workers', applicationId });
  const token = readCursor(query.cursor, ['time', 'text']);
  const cursors = await deps.cursors();
  const position = cursors.verifyOptional(key, token);
  const after = position && { createdAt: new Date(position[0] as number), id: position[1] as string };
  const rows = await listWorkersOfApplication(deps.sql, applicationId, { ...(after ? { after } : {}), take: query.limit + 1 });
  return pageOf(rows, query.limit, (last) => cursors.issue(key, [last.createdAt.getTime(), last.id]), workerSummary);
}

/**
 * GET /workers/{workerId}/events: newest recorded first (id descending). A worker of another
 * application is a 404, like an unknown one; the cursor's structure is checked first (400), its
 * origin after existence. The worker and its events are one statement, read with the position
 * the cursor claims; the page is only used once the cursor proved to be this listing's.
 */
export async function listWorkerEventsPage(deps: Deps, applicationId: number, workerId: string, query: PageQuery): Promise<WorkerEventPage> {
  const token = readCursor(query.cursor, ['id']);
  const cursors = await deps.cursors();
  const claimed = token?.position[0] as number | undefined;
  const rows = await workerEventsOf(deps.sql, applicationId, workerId, {
    ...(claimed !== undefined ? { beforeId: claimed } : {}),
    take: query.limit + 1,
  });
  if (!rows) throw new NotFound(`Worker "${workerId}" not found.`);
  const key = listingKey({ kind: 'worker-events', applicationId, workerId });
  cursors.verifyOptional(key, token);
  return pageOf(rows, query.limit, (last) => cursors.issue(key, [last.id]), workerEventRecord);
}
