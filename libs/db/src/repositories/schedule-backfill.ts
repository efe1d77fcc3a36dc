import type { DbOrTx } from '../db-types.js';
import { toRun, type RawRun, type ScheduleRunRecord } from './schedule-runs.js';

/**
 * Runs of POST /schedules/{name}/backfill (issue 11, decision 0087). A Backfill run names its tick
 * in `backfill_tick` (= scheduledFor) and leaves `tick` null, so it never claims one of the
 * schedule's own ticks: unique (schedule_id, tick) stays the scheduler's, and unique
 * (schedule_id, backfill_tick) makes a backfill create at most one run per tick. The runs are
 * written as every fired tick's are (schedule-fire-ticks.ts); callers hold the schedule's row lock
 * (lockScheduleByName), as every writer of its runs does.
 */

/** The schedule's Backfill runs at `ticks`, with the live status of their pipelines, oldest tick first. */
export async function backfillRunsAt(db: DbOrTx, scheduleId: number, ticks: readonly Date[]): Promise<ScheduleRunRecord[]> {
  if (ticks.length === 0) return [];
  const rows = await db.$queryRaw<RawRun[]>`
    SELECT r.id, r.schedule_id, r.trigger, r.status, r.scheduled_for, r.created_at, r.pipeline_id, p.status::text AS pipeline_status, r.reason
    FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id
    WHERE r.schedule_id = ${BigInt(scheduleId)} AND r.backfill_tick = ANY(${[...ticks]}::timestamptz[])
    ORDER BY r.backfill_tick`;
  return rows.map(toRun);
}
