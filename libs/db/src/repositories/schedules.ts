import { isTerminalPipeline, type PipelineStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';
import type { Prisma, Schedule, ScheduleKind, ScheduleStatus } from '../generated/prisma/client.js';
import { cancelUnfinishedStages } from './stages.js';
import { lockPipeline, markPipelineCancelled } from './pipelines.js';

/**
 * Persistence of schedules and their runs (addendum §14). Lock order: schedule row, then its
 * pipelines (Replace cancels them), then stages and executions, as everywhere else.
 */

export interface ScheduleRecord {
  id: number;
  applicationId: number;
  name: string;
  status: ScheduleStatus;
  kind: ScheduleKind;
  cronExpression: string | null;
  timeZone: string;
  intervalSeconds: number | null;
  runAt: Date | null;
  /** The stored PipelineDefinition (validated, without apiKey). */
  definition: unknown;
  definitionVersion: number;
  overlapPolicy: string;
  catchupPolicy: string;
  catchupMax: number;
  jitterSeconds: number;
  planAnchor: Date;
  nextTickAt: Date | null;
  nextRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a PUT stores (everything but identity, status and timestamps of creation). */
export interface ScheduleSettingsWrite {
  kind: ScheduleKind;
  cronExpression: string | null;
  timeZone: string;
  intervalSeconds: number | null;
  runAt: Date | null;
  definition: unknown;
  overlapPolicy: string;
  catchupPolicy: string;
  catchupMax: number;
  jitterSeconds: number;
}

export interface SchedulePlanWrite {
  planAnchor: Date;
  nextTickAt: Date | null;
  nextRunAt: Date | null;
}

export type ScheduleRunTrigger = 'Scheduled' | 'Manual' | 'Catchup';
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

/**
 * The matching key of a name: each code point lower-cased on its own, keeping the original when
 * lower-casing would expand it, so the key never outgrows the 200 characters of the name.
 */
export function scheduleNameKey(name: string): string {
  return [...name].map((c) => (c.toLowerCase().length === c.length ? c.toLowerCase() : c)).join('');
}

const toRecord = (s: Schedule): ScheduleRecord => ({ ...s, id: Number(s.id) });
const json = (value: unknown): Prisma.InputJsonValue => value as Prisma.InputJsonValue;

export async function findScheduleByName(db: DbOrTx, applicationId: number, name: string): Promise<ScheduleRecord | null> {
  const row = await db.schedule.findUnique({ where: { applicationId_nameKey: { applicationId, nameKey: scheduleNameKey(name) } } });
  return row ? toRecord(row) : null;
}

/** Locks the application's schedule of that name (case-insensitive) for the rest of the transaction. */
export async function lockScheduleByName(tx: DbOrTx, applicationId: number, name: string): Promise<ScheduleRecord | null> {
  const rows = await tx.$queryRaw<{ id: bigint }[]>`
    SELECT id FROM schedules WHERE application_id = ${applicationId} AND name_key = ${scheduleNameKey(name)} FOR UPDATE`;
  const id = rows[0]?.id;
  return id === undefined ? null : toRecord(await tx.schedule.findUniqueOrThrow({ where: { id } }));
}

/** Locks one schedule; with skipLocked, null when another transaction holds it. */
export async function lockSchedule(tx: DbOrTx, scheduleId: number, skipLocked: boolean): Promise<ScheduleRecord | null> {
  const id = BigInt(scheduleId);
  const rows = skipLocked
    ? await tx.$queryRaw<{ id: bigint }[]>`SELECT id FROM schedules WHERE id = ${id} FOR UPDATE SKIP LOCKED`
    : await tx.$queryRaw<{ id: bigint }[]>`SELECT id FROM schedules WHERE id = ${id} FOR UPDATE`;
  return rows.length === 0 ? null : toRecord(await tx.schedule.findUniqueOrThrow({ where: { id } }));
}

/**
 * Locks the Active schedule that is due first (nextRunAt <= now), skipping rows another scheduler
 * replica holds: replicas share the due schedules without waiting on each other. `exclude` lists
 * schedules the caller gave up on for now (a failing one must not block those behind it).
 */
export async function lockDueSchedule(tx: DbOrTx, now: Date, exclude: readonly number[] = []): Promise<ScheduleRecord | null> {
  const excluded = exclude.map((id) => BigInt(id));
  const rows = await tx.$queryRaw<{ id: bigint }[]>`
    SELECT id FROM schedules WHERE status = 'Active' AND next_run_at <= ${now} AND NOT (id = ANY(${excluded}::bigint[]))
    ORDER BY next_run_at LIMIT 1 FOR UPDATE SKIP LOCKED`;
  const id = rows[0]?.id;
  return id === undefined ? null : toRecord(await tx.schedule.findUniqueOrThrow({ where: { id } }));
}

/** The earliest fire time over Active schedules: what the scheduler's timer waits for. */
export async function earliestNextRunAt(db: DbOrTx): Promise<Date | null> {
  const row = await db.schedule.findFirst({
    where: { status: 'Active', nextRunAt: { not: null } },
    orderBy: { nextRunAt: 'asc' },
    select: { nextRunAt: true },
  });
  return row?.nextRunAt ?? null;
}

/** Throws a unique violation (`schedules_application_id_name_key_key`) when the name is taken. */
export async function insertSchedule(
  tx: DbOrTx,
  input: { applicationId: number; name: string; now: Date } & ScheduleSettingsWrite & SchedulePlanWrite,
): Promise<ScheduleRecord> {
  const { now, definition, ...rest } = input;
  const row = await tx.schedule.create({
    data: { ...rest, nameKey: scheduleNameKey(input.name), definition: json(definition), createdAt: now, updatedAt: now },
  });
  return toRecord(row);
}

export async function updateSchedule(
  tx: DbOrTx,
  scheduleId: number,
  data: Partial<ScheduleSettingsWrite & SchedulePlanWrite & { status: ScheduleStatus; definitionVersion: number; updatedAt: Date }>,
): Promise<ScheduleRecord> {
  const { definition, ...rest } = data;
  const row = await tx.schedule.update({
    where: { id: BigInt(scheduleId) },
    data: { ...rest, ...(definition === undefined ? {} : { definition: json(definition) }) },
  });
  return toRecord(row);
}

/** A page of the application's schedules by id ascending, after `afterId`; ask for one extra row. */
export async function listSchedules(
  db: DbOrTx,
  applicationId: number,
  query: { status?: ScheduleStatus; afterId?: number; take: number },
): Promise<ScheduleRecord[]> {
  const rows = await db.schedule.findMany({
    where: {
      applicationId,
      ...(query.status ? { status: query.status } : {}),
      ...(query.afterId !== undefined ? { id: { gt: BigInt(query.afterId) } } : {}),
    },
    orderBy: { id: 'asc' },
    take: query.take,
  });
  return rows.map(toRecord);
}

interface RawRun {
  id: bigint;
  schedule_id: bigint;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduled_for: Date;
  created_at: Date;
  pipeline_id: bigint | null;
  pipeline_status: PipelineStatus | null;
  reason: string | null;
}

const toRun = (r: RawRun): ScheduleRunRecord => ({
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

export async function loadRun(db: DbOrTx, runId: number): Promise<ScheduleRunRecord | null> {
  const rows = await db.$queryRaw<RawRun[]>`
    SELECT r.id, r.schedule_id, r.trigger, r.status, r.scheduled_for, r.created_at, r.pipeline_id, p.status::text AS pipeline_status, r.reason
    FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id WHERE r.id = ${BigInt(runId)}`;
  const row = rows[0];
  return row ? toRun(row) : null;
}

export interface NewRun {
  scheduleId: number;
  applicationId: number;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduledFor: Date;
  pipelineId: number | null;
  reason: string | null;
  now: Date;
}

/** Records a Manual run (its tick is null: manual runs never claim a planned tick). */
export async function insertManualRun(tx: DbOrTx, run: Omit<NewRun, 'trigger'>): Promise<number> {
  const row = await tx.scheduleRun.create({
    data: {
      scheduleId: BigInt(run.scheduleId),
      applicationId: run.applicationId,
      trigger: 'Manual',
      status: run.status,
      scheduledFor: run.scheduledFor,
      tick: null,
      pipelineId: run.pipelineId === null ? null : BigInt(run.pipelineId),
      reason: run.reason,
      createdAt: run.now,
    },
    select: { id: true },
  });
  return Number(row.id);
}

/**
 * Claims a planned tick: inserts its run unless the tick already has one (unique schedule_id,
 * tick). Returns the run id, or null when the tick was fired before: a tick fires at most once.
 */
export async function claimTick(
  tx: DbOrTx,
  claim: { scheduleId: number; applicationId: number; trigger: 'Scheduled' | 'Catchup'; tick: Date; now: Date },
): Promise<number | null> {
  const rows = await tx.$queryRaw<{ id: bigint }[]>`
    INSERT INTO schedule_runs (schedule_id, application_id, trigger, status, scheduled_for, tick, created_at)
    VALUES (${BigInt(claim.scheduleId)}, ${claim.applicationId}, ${claim.trigger}, 'Created', ${claim.tick}, ${claim.tick}, ${claim.now})
    ON CONFLICT (schedule_id, tick) DO NOTHING RETURNING id`;
  const id = rows[0]?.id;
  return id === undefined ? null : Number(id);
}

export async function settleRun(
  tx: DbOrTx,
  runId: number,
  outcome: { status: ScheduleRunStatus; pipelineId: number | null; reason: string | null },
): Promise<void> {
  await tx.scheduleRun.update({
    where: { id: BigInt(runId) },
    data: { status: outcome.status, pipelineId: outcome.pipelineId === null ? null : BigInt(outcome.pipelineId), reason: outcome.reason },
  });
}

/** Pausing or archiving turns the schedule's Queued runs into Skipped (addendum §14.5). */
export async function skipQueuedRuns(tx: DbOrTx, scheduleId: number, reason: 'paused' | 'archived'): Promise<number> {
  const { count } = await tx.scheduleRun.updateMany({
    where: { scheduleId: BigInt(scheduleId), status: 'Queued' },
    data: { status: 'Skipped', reason },
  });
  return count;
}

export async function countQueuedRuns(tx: DbOrTx, scheduleId: number): Promise<number> {
  return tx.scheduleRun.count({ where: { scheduleId: BigInt(scheduleId), status: 'Queued' } });
}

export async function oldestQueuedRun(tx: DbOrTx, scheduleId: number): Promise<{ id: number; scheduledFor: Date } | null> {
  const row = await tx.scheduleRun.findFirst({
    where: { scheduleId: BigInt(scheduleId), status: 'Queued' },
    orderBy: { id: 'asc' },
    select: { id: true, scheduledFor: true },
  });
  return row ? { id: Number(row.id), scheduledFor: row.scheduledFor } : null;
}

/** Active schedules holding Queued runs, oldest queued first. */
export async function schedulesWithQueuedRuns(db: DbOrTx, limit: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ schedule_id: bigint }[]>`
    SELECT r.schedule_id FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.status = 'Queued' AND s.status = 'Active'
    GROUP BY r.schedule_id ORDER BY min(r.id) LIMIT ${limit}`;
  return rows.map((r) => Number(r.schedule_id));
}

/** Ids of the schedule's pipelines that are not terminal, oldest first (the overlap of §14.5). */
export async function unfinishedPipelinesOfSchedule(tx: DbOrTx, scheduleId: number): Promise<number[]> {
  const rows = await tx.pipeline.findMany({
    where: { scheduleId: BigInt(scheduleId), status: { notIn: ['Completed', 'Failed', 'Cancelled'] } },
    orderBy: { id: 'asc' },
    select: { id: true },
  });
  return rows.map((r) => Number(r.id));
}

/**
 * Cancels a pipeline inside the caller's transaction exactly as POST cancel does: the pipeline
 * row is locked, its unfinished stages and open executions end, and it becomes Cancelled.
 * Returns false when it was already terminal (nothing changed).
 */
export async function cancelPipelineInTransaction(tx: DbOrTx, pipelineId: number, now: Date): Promise<boolean> {
  const pipeline = await lockPipeline(tx, pipelineId);
  if (!pipeline || isTerminalPipeline(pipeline.status)) return false;
  await cancelUnfinishedStages(tx, pipelineId, now);
  await markPipelineCancelled(tx, pipelineId, now);
  return true;
}

/**
 * Runs `fn` under a savepoint of the caller's transaction: when it throws, only its own writes are
 * rolled back and the error is returned, so the transaction can still record the failure.
 */
export async function inSavepoint<T>(tx: DbOrTx, fn: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  await tx.$executeRawUnsafe('SAVEPOINT po_attempt');
  try {
    const value = await fn();
    await tx.$executeRawUnsafe('RELEASE SAVEPOINT po_attempt');
    return { ok: true, value };
  } catch (error) {
    await tx.$executeRawUnsafe('ROLLBACK TO SAVEPOINT po_attempt');
    return { ok: false, error };
  }
}
