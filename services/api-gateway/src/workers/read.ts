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
import type { Deps } from '../deps.js';
import { cursorPosition, encodeCursor, positionInteger, readCursor, type ActivityListing } from './cursor.js';

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
  const listing: ActivityListing = { kind: 'workers', applicationId };
  const position = cursorPosition(listing, readCursor(query.cursor, 2));
  const after = position && { createdAt: new Date(positionInteger(position[0])), id: position[1] ?? '' };
  const rows = await listWorkersOfApplication(deps.sql, applicationId, { ...(after ? { after } : {}), take: query.limit + 1 });
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(workerSummary),
    nextCursor: rows.length > query.limit && last ? encodeCursor(listing, [String(last.createdAt.getTime()), last.id]) : null,
  };
}

/**
 * GET /workers/{workerId}/events: newest recorded first (id descending). A worker of another
 * application is a 404, like an unknown one; the cursor's structure is checked first (400), its
 * origin after existence. The worker and its events are one statement, read with the position
 * the cursor claims; the page is only used once the cursor proved to be this listing's.
 */
export async function listWorkerEventsPage(deps: Deps, applicationId: number, workerId: string, query: PageQuery): Promise<WorkerEventPage> {
  const token = readCursor(query.cursor, 1);
  const claimed = Number(token?.position[0]);
  const rows = await workerEventsOf(deps.sql, applicationId, workerId, {
    ...(Number.isSafeInteger(claimed) ? { beforeId: claimed } : {}),
    take: query.limit + 1,
  });
  if (!rows) throw new NotFound(`Worker "${workerId}" not found.`);
  const listing: ActivityListing = { kind: 'worker-events', applicationId, workerId };
  const position = cursorPosition(listing, token);
  if (position) positionInteger(position[0]);
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(workerEventRecord),
    nextCursor: rows.length > query.limit && last ? encodeCursor(listing, [String(last.id)]) : null,
  };
}
