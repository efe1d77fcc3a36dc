import type { Schedule, ScheduleRun, ScheduleStatus } from '@po/contracts';
import { findScheduleByName, listRuns, listSchedules, recentRuns } from '@po/db';
import { HEALTH_WINDOW, NotFound } from '@po/domain';
import { pageOf, readCursor } from '@po/http';
import { readSnapshot, type Deps } from '../deps.js';
import { listingKey, type Listing } from './cursor.js';
import { runResponse, scheduleResponse } from './view.js';

export interface PageQuery {
  cursor: string | undefined;
  limit: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * GET /schedules/{name}: names are application-scoped, so another application's is 404. The
 * schedule and the runs of its last-run fields and health are read in one snapshot.
 */
export async function getSchedule(deps: Deps, applicationId: number, name: string): Promise<Schedule> {
  return readSnapshot(deps, async (tx) => {
    const record = await findScheduleByName(tx, applicationId, name);
    if (!record) throw new NotFound(`Schedule "${name}" not found.`);
    const runs = await recentRuns(tx, [record.id], HEALTH_WINDOW);
    return scheduleResponse(record, runs.get(record.id) ?? [], deps.clock());
  });
}

/**
 * GET /schedules (addendum §14.8): by id ascending, optionally one status, health on each item;
 * the page and its runs in one snapshot.
 */
export async function listSchedulesPage(
  deps: Deps,
  applicationId: number,
  query: PageQuery & { status: ScheduleStatus | undefined },
): Promise<Page<Schedule>> {
  const key = listingKey({ kind: 'schedules', applicationId, status: query.status });
  const token = readCursor(query.cursor, ['id']);
  const cursors = await deps.cursors();
  const afterId = cursors.verifyOptional(key, token)?.[0] as number | undefined;
  const now = deps.clock();
  return readSnapshot(deps, async (tx) => {
    const rows = await listSchedules(tx, applicationId, {
      ...(query.status ? { status: query.status } : {}),
      ...(afterId !== undefined ? { afterId } : {}),
      take: query.limit + 1,
    });
    const runs = await recentRuns(tx, rows.slice(0, query.limit).map((r) => r.id), HEALTH_WINDOW);
    return pageOf(rows, query.limit, (last) => cursors.issue(key, [last.id]), (r) => scheduleResponse(r, runs.get(r.id) ?? [], now));
  });
}

/** GET /schedules/{name}/runs (addendum §14.8): newest first; Archived schedules too; one snapshot. */
export async function listRunsPage(deps: Deps, applicationId: number, name: string, query: PageQuery): Promise<Page<ScheduleRun>> {
  const token = readCursor(query.cursor, ['id']);
  const cursors = await deps.cursors();
  return readSnapshot(deps, async (tx) => {
    const record = await findScheduleByName(tx, applicationId, name);
    if (!record) throw new NotFound(`Schedule "${name}" not found.`);
    const listing: Listing = { kind: 'runs', applicationId, scheduleId: record.id };
    const key = listingKey(listing);
    const beforeId = cursors.verifyOptional(key, token)?.[0] as number | undefined;
    const rows = await listRuns(tx, record.id, { ...(beforeId !== undefined ? { beforeId } : {}), take: query.limit + 1 });
    return pageOf(rows, query.limit, (last) => cursors.issue(key, [last.id]), runResponse);
  });
}
