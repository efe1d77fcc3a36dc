import { formatDateTime, type FleetWorkerEvent, type FleetWorkerEventPage, type JsonObject, type WorkerEventKind } from '@po/contracts';
import { fleetEventsOf, type FleetEventRow } from '@po/db';
import { listingOf, pageOf, readCursor } from '@po/http';
import type { Deps } from '../deps.js';
import type { PageQuery } from '../workers/read.js';

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

function fleetEvent(e: FleetEventRow): FleetWorkerEvent {
  return {
    id: e.id,
    workerId: e.workerId,
    workerName: e.workerName,
    // Only validated kinds are stored (POST /workers/events, bootstrap, shutdown).
    kind: e.kind as WorkerEventKind,
    at: formatDateTime(e.at),
    message: e.message,
    stageId: e.stageId,
    pipelineId: e.pipelineId,
    data: isObject(e.data) ? e.data : null,
  };
}

/**
 * GET /worker-events: the events of every worker of the application, newest recorded first (id
 * descending): the dashboard's fleet activity feed. Pages by event id with the shared signed
 * cursor (decision 0089), its listing the application's feed; the cursor is verified before the
 * read, since the listing needs no lookup.
 */
export async function listFleetEventsPage(deps: Deps, applicationId: number, query: PageQuery): Promise<FleetWorkerEventPage> {
  const key = listingOf('fleet-events', { applicationId });
  const token = readCursor(query.cursor, ['id']);
  const cursors = await deps.cursors();
  const beforeId = cursors.verifyOptional(key, token)?.[0] as number | undefined;
  const rows = await fleetEventsOf(deps.sql, applicationId, { ...(beforeId !== undefined ? { beforeId } : {}), take: query.limit + 1 });
  return pageOf(rows, query.limit, (last) => cursors.issue(key, [last.id]), fleetEvent);
}
