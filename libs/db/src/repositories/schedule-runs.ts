import type { PipelineStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';
import { Prisma } from '../generated/prisma/client.js';

// A schedule's runs (addendum §14): one row per tick it fired, skipped, queued or failed, and per
// manual trigger or backfilled tick.

/** Backfill: made by POST /schedules/{name}/backfill for a tick of a range (schedule-backfill.ts). */
export type ScheduleRunTrigger = 'Scheduled' | 'Manual' | 'Catchup' | 'Backfill';
export type ScheduleRunStatus = 'Created' | 'Queued' | 'Skipped' | 'Failed';

export interface ScheduleRunRecord {
  id: number;
  scheduleId: number;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduledFor: Date;
  createdAt: Date;
  pipelineId: number | null;
  /** Live status of the run's pipeline. */
  pipelineStatus: PipelineStatus | null;
  reason: string | null;
}

/** A schedule_runs row as raw SQL returns it (int8 as bigint from Prisma, as text from pg). */
export interface RawRun {
  id: bigint | string;
  schedule_id: bigint | string;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduled_for: Date;
  created_at: Date;
  pipeline_id: bigint | string | null;
  pipeline_status: PipelineStatus | null;
  reason: string | null;
}

export const toRun = (r: RawRun): ScheduleRunRecord => ({
  id: Number(r.id),
  scheduleId: Number(r.schedule_id),
  trigger: r.trigger,
  status: r.status,
  scheduledFor: r.scheduled_for,
  createdAt: r.created_at,
  pipelineId: r.pipeline_id === null ? null : Number(r.pipeline_id),
  pipelineStatus: r.pipeline_status,
  reason: r.reason,
});

/** A page of a schedule's runs, newest first, before `beforeId`; ask for one extra row. */
export async function listRuns(db: DbOrTx, scheduleId: number, query: { beforeId?: number; take: number }): Promise<ScheduleRunRecord[]> {
  const before = BigInt(query.beforeId ?? Number.MAX_SAFE_INTEGER);
  const rows = await db.$queryRaw<RawRun[]>`
    SELECT r.id, r.schedule_id, r.trigger, r.status, r.scheduled_for, r.created_at, r.pipeline_id, p.status::text AS pipeline_status, r.reason
    FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id
    WHERE r.schedule_id = ${BigInt(scheduleId)} AND r.id < ${before}
    ORDER BY r.id DESC LIMIT ${query.take}`;
  return rows.map(toRun);
}

/** The newest `window` runs of each schedule (newest first), for last-run fields and health. */
export async function recentRuns(db: DbOrTx, scheduleIds: readonly number[], window: number): Promise<Map<number, ScheduleRunRecord[]>> {
  const byId = new Map<number, ScheduleRunRecord[]>(scheduleIds.map((id) => [id, []]));
  if (scheduleIds.length === 0) return byId;
  const ids = scheduleIds.map((id) => BigInt(id));
  const rows = await db.$queryRaw<RawRun[]>`
    SELECT r.id, r.schedule_id, r.trigger, r.status, r.scheduled_for, r.created_at, r.pipeline_id, p.status::text AS pipeline_status, r.reason
    FROM unnest(${ids}::bigint[]) AS s(id)
    CROSS JOIN LATERAL (SELECT * FROM schedule_runs WHERE schedule_id = s.id ORDER BY id DESC LIMIT ${window}) r
    LEFT JOIN pipelines p ON p.id = r.pipeline_id
    ORDER BY r.schedule_id, r.id DESC`;
  for (const row of rows) byId.get(Number(row.schedule_id))?.push(toRun(row));
  return byId;
}

export interface NewRun {
  scheduleId: number;
  applicationId: number;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduledFor: Date;
  /** The planned tick a Scheduled or Catchup run claims; null for Manual runs. */
  tick: Date | null;
  pipelineId: number | null;
  reason: string | null;
  createdAt: Date;
}

const runColumns = (runs: readonly NewRun[]) => Prisma.sql`
  SELECT * FROM unnest(${runs.map((r) => BigInt(r.scheduleId))}::bigint[], ${runs.map((r) => r.applicationId)}::int[],
    ${runs.map((r) => r.trigger)}::text[], ${runs.map((r) => r.status)}::text[], ${runs.map((r) => r.scheduledFor)}::timestamptz[],
    ${runs.map((r) => r.tick)}::timestamptz[], ${runs.map((r) => (r.pipelineId === null ? null : BigInt(r.pipelineId)))}::bigint[],
    ${runs.map((r) => r.reason)}::text[], ${runs.map((r) => r.createdAt)}::timestamptz[])`;
const RUN_INSERT = Prisma.sql`INSERT INTO schedule_runs (schedule_id, application_id, trigger, status, scheduled_for, tick, pipeline_id, reason, created_at)`;

/**
 * Records one run and returns its id. With `skipIfFired`, a tick that already has a run is left
 * alone and null is returned: the run claims the tick, which then fires at most once.
 */
export async function insertRun(tx: DbOrTx, run: NewRun, options: { skipIfFired?: boolean } = {}): Promise<number | null> {
  const conflict = options.skipIfFired ? Prisma.sql`ON CONFLICT (schedule_id, tick) DO NOTHING` : Prisma.empty;
  const rows = await tx.$queryRaw<{ id: bigint }[]>`${RUN_INSERT} ${runColumns([run])} ${conflict} RETURNING id`;
  return rows[0] ? Number(rows[0].id) : null;
}

/** Pausing or archiving turns the schedule's Queued runs into Skipped (addendum §14.5). */
export async function skipQueuedRuns(tx: DbOrTx, scheduleId: number, reason: 'paused' | 'archived'): Promise<number> {
  const { count } = await tx.scheduleRun.updateMany({
    where: { scheduleId: BigInt(scheduleId), status: 'Queued' },
    data: { status: 'Skipped', reason },
  });
  return count;
}

/** How many runs each schedule holds Queued. */
export async function queuedRunCounts(tx: DbOrTx, scheduleIds: readonly number[]): Promise<Map<number, number>> {
  const rows = await tx.$queryRaw<{ schedule_id: bigint; n: bigint }[]>`
    SELECT schedule_id, count(*) AS n FROM schedule_runs
    WHERE schedule_id = ANY(${scheduleIds.map((id) => BigInt(id))}::bigint[]) AND status = 'Queued' GROUP BY schedule_id`;
  return new Map(rows.map((r) => [Number(r.schedule_id), Number(r.n)]));
}

/** The schedule's oldest Queued run: the next to get a pipeline (Queue promotion). */
export async function oldestQueuedRun(tx: DbOrTx, scheduleId: number): Promise<{ id: number; trigger: ScheduleRunTrigger; scheduledFor: Date } | null> {
  const row = await tx.scheduleRun.findFirst({
    where: { scheduleId: BigInt(scheduleId), status: 'Queued' },
    orderBy: { id: 'asc' },
    select: { id: true, trigger: true, scheduledFor: true },
  });
  return row ? { id: Number(row.id), trigger: row.trigger as ScheduleRunTrigger, scheduledFor: row.scheduledFor } : null;
}

/** Active schedules holding Queued runs and no unfinished pipeline (ready for promotion), oldest queued first. */
export async function schedulesWithQueuedRuns(db: DbOrTx, limit: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ schedule_id: bigint }[]>`
    SELECT r.schedule_id FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.status = 'Queued' AND s.status = 'Active' AND NOT EXISTS (
      SELECT 1 FROM pipelines p WHERE p.schedule_id = r.schedule_id AND p.status NOT IN ('Completed', 'Failed', 'Cancelled'))
    GROUP BY r.schedule_id ORDER BY min(r.id) LIMIT ${limit}`;
  return rows.map((r) => Number(r.schedule_id));
}
