import type { DbOrTx } from '../db-types.js';
import { toRun, type RawRun, type ScheduleRunRecord, type ScheduleRunStatus } from './schedule-runs.js';

/**
 * Runs of POST /schedules/{name}/backfill (issue 11, decision 0087). A Backfill run names its tick
 * in `backfill_tick` (= scheduledFor) and leaves `tick` null, so it never claims one of the
 * schedule's own ticks: unique (schedule_id, tick) stays the scheduler's, and unique
 * (schedule_id, backfill_tick) makes a backfill create at most one run per tick. Callers hold the
 * schedule's row lock (lockScheduleByName), as every writer of its runs does.
 */

export interface NewBackfillRun {
  scheduleId: number;
  applicationId: number;
  /** The unjittered tick: scheduledFor and backfill_tick. */
  tick: Date;
  status: ScheduleRunStatus;
  pipelineId: number | null;
  reason: string | null;
  createdAt: Date;
}

/** Which of `ticks` already have a Backfill run of the schedule (epoch ms). */
export async function backfilledTicks(tx: DbOrTx, scheduleId: number, ticks: readonly Date[]): Promise<Set<number>> {
  if (ticks.length === 0) return new Set();
  const rows = await tx.$queryRaw<{ backfill_tick: Date }[]>`
    SELECT backfill_tick FROM schedule_runs
    WHERE schedule_id = ${BigInt(scheduleId)} AND backfill_tick = ANY(${[...ticks]}::timestamptz[])`;
  return new Set(rows.map((r) => r.backfill_tick.getTime()));
}

/**
 * Records Backfill runs in one statement, ids increasing in the order given (tick order). A tick
 * that already has a Backfill run is left alone (ON CONFLICT DO NOTHING); returns how many were
 * inserted, so a caller that expected all of them can tell.
 */
export async function insertBackfillRuns(tx: DbOrTx, runs: readonly NewBackfillRun[]): Promise<number> {
  if (runs.length === 0) return 0;
  return tx.$executeRaw`
    INSERT INTO schedule_runs (schedule_id, application_id, trigger, status, scheduled_for, tick, backfill_tick, pipeline_id, reason, created_at)
    SELECT v.schedule_id, v.application_id, 'Backfill', v.status, v.tick, NULL, v.tick, v.pipeline_id, v.reason, v.created_at
    FROM unnest(${runs.map((r) => BigInt(r.scheduleId))}::bigint[], ${runs.map((r) => r.applicationId)}::int[],
                ${runs.map((r) => r.status)}::text[], ${runs.map((r) => r.tick)}::timestamptz[],
                ${runs.map((r) => (r.pipelineId === null ? null : BigInt(r.pipelineId)))}::bigint[],
                ${runs.map((r) => r.reason)}::text[], ${runs.map((r) => r.createdAt)}::timestamptz[])
      WITH ORDINALITY AS v(schedule_id, application_id, status, tick, pipeline_id, reason, created_at, ord)
    ORDER BY v.ord
    ON CONFLICT (schedule_id, backfill_tick) DO NOTHING`;
}

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
