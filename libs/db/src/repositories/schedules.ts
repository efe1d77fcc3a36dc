import { isTerminalPipeline, type PipelineStatus } from '@po/domain';
import type { DbOrTx } from '../db-types.js';
import { Prisma, type Schedule, type ScheduleKind, type ScheduleStatus } from '../generated/prisma/client.js';
import { cancelUnfinishedStages } from './stages.js';
import { lockPipeline, markPipelineCancelled } from './pipelines.js';

/**
 * Persistence of schedules and their runs (addendum §14). Lock order: schedule row, then its
 * pipelines (Replace cancels them), then stages and executions, as everywhere else.
 */

/** A stored schedule (ids as numbers); `definition` is the validated PipelineDefinition without apiKey. */
export type ScheduleRecord = Omit<Schedule, 'id' | 'nameKey'> & { id: number };

/**
 * A schedule as the scheduler plans it: everything but the definition, which can be tens of MB
 * (100 stages of 256 KiB inputs); the scheduler reads it with `scheduleDefinition` when it fires.
 */
export type SchedulePlanRecord = Omit<ScheduleRecord, 'definition'>;

/** What a PUT stores besides identity, status, version and timestamps. */
export type ScheduleSettingsWrite = Pick<
  ScheduleRecord,
  'kind' | 'cronExpression' | 'timeZone' | 'intervalSeconds' | 'runAt' | 'overlapPolicy' | 'catchupPolicy' | 'catchupMax' | 'jitterSeconds'
> & { definition: unknown };

export interface SchedulePlanWrite {
  planAnchor: Date;
  nextTickAt: Date | null;
  nextRunAt: Date | null;
  /** Ticks after nextTickAt firing at or before this were handled (schema comment); a (re)plan clears it. */
  handledThrough: Date | null;
}

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

/**
 * The matching key of a name: each code point lower-cased on its own, keeping the original when
 * lower-casing would expand it, so the key never outgrows the 200 characters of the name.
 */
export function scheduleNameKey(name: string): string {
  return [...name].map((c) => (c.toLowerCase().length === c.length ? c.toLowerCase() : c)).join('');
}

const toRecord = ({ nameKey: _key, ...s }: Schedule): ScheduleRecord => ({ ...s, id: Number(s.id) });
const json = (value: unknown): Prisma.InputJsonValue => value as Prisma.InputJsonValue;

export async function findScheduleByName(db: DbOrTx, applicationId: number, name: string): Promise<ScheduleRecord | null> {
  const row = await db.schedule.findUnique({ where: { applicationId_nameKey: { applicationId, nameKey: scheduleNameKey(name) } } });
  return row ? toRecord(row) : null;
}

interface RawSchedule {
  id: bigint;
  application_id: number;
  name: string;
  status: ScheduleStatus;
  kind: ScheduleKind;
  cron_expression: string | null;
  time_zone: string;
  interval_seconds: number | null;
  run_at: Date | null;
  definition: Prisma.JsonValue;
  definition_version: number;
  overlap_policy: string;
  catchup_policy: string;
  catchup_max: number;
  jitter_seconds: number;
  plan_anchor: Date;
  next_tick_at: Date | null;
  next_run_at: Date | null;
  handled_through: Date | null;
  created_at: Date;
  updated_at: Date;
}

const PLAN_COLUMNS = Prisma.sql`id, application_id, name, status::text AS status, kind::text AS kind, cron_expression, time_zone,
  interval_seconds, run_at, definition_version, overlap_policy, catchup_policy, catchup_max, jitter_seconds,
  plan_anchor, next_tick_at, next_run_at, handled_through, created_at, updated_at`;
const COLUMNS = Prisma.sql`${PLAN_COLUMNS}, definition`;

const planFromRaw = (r: Omit<RawSchedule, 'definition'>): SchedulePlanRecord => ({
  id: Number(r.id),
  applicationId: r.application_id,
  name: r.name,
  status: r.status,
  kind: r.kind,
  cronExpression: r.cron_expression,
  timeZone: r.time_zone,
  intervalSeconds: r.interval_seconds,
  runAt: r.run_at,
  definitionVersion: r.definition_version,
  overlapPolicy: r.overlap_policy,
  catchupPolicy: r.catchup_policy,
  catchupMax: r.catchup_max,
  jitterSeconds: r.jitter_seconds,
  planAnchor: r.plan_anchor,
  nextTickAt: r.next_tick_at,
  nextRunAt: r.next_run_at,
  handledThrough: r.handled_through,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const fromRaw = (r: RawSchedule): ScheduleRecord => ({ ...planFromRaw(r), definition: r.definition });

/** Locks the application's schedule of that name (case-insensitive) for the rest of the transaction. */
export async function lockScheduleByName(tx: DbOrTx, applicationId: number, name: string): Promise<ScheduleRecord | null> {
  const rows = await tx.$queryRaw<RawSchedule[]>`
    SELECT ${COLUMNS} FROM schedules WHERE application_id = ${applicationId} AND name_key = ${scheduleNameKey(name)} FOR UPDATE`;
  return rows[0] ? fromRaw(rows[0]) : null;
}

/** Locks one schedule, without its definition; with skipLocked, null when another transaction holds it. */
export async function lockSchedule(tx: DbOrTx, scheduleId: number, skipLocked: boolean): Promise<SchedulePlanRecord | null> {
  const id = BigInt(scheduleId);
  const rows = skipLocked
    ? await tx.$queryRaw<RawSchedule[]>`SELECT ${PLAN_COLUMNS} FROM schedules WHERE id = ${id} FOR UPDATE SKIP LOCKED`
    : await tx.$queryRaw<RawSchedule[]>`SELECT ${PLAN_COLUMNS} FROM schedules WHERE id = ${id} FOR UPDATE`;
  return rows[0] ? planFromRaw(rows[0]) : null;
}

/**
 * The stored definition of a schedule, read when a tick creates its pipeline. Under the row lock
 * of lockDueSchedules or lockSchedule it is the definition the plan was locked with (a PUT takes
 * the same lock before it writes).
 */
export async function scheduleDefinition(tx: DbOrTx, scheduleId: number): Promise<Prisma.JsonValue | null> {
  const rows = await tx.$queryRaw<{ definition: Prisma.JsonValue }[]>`SELECT definition FROM schedules WHERE id = ${BigInt(scheduleId)}`;
  return rows[0]?.definition ?? null;
}

/**
 * Locks up to `limit` Active schedules that are due (nextRunAt <= now), earliest first, skipping
 * rows another scheduler replica holds: replicas share the due schedules without waiting on each
 * other. `exclude` lists schedules the caller gave up on for now; `only` restricts the choice.
 * Definitions stay in the table: a batch of 50 could otherwise hold 50 × ~30 MB.
 */
export async function lockDueSchedules(
  tx: DbOrTx,
  now: Date,
  options: { limit: number; exclude?: readonly number[]; only?: readonly number[] },
): Promise<SchedulePlanRecord[]> {
  const excluded = (options.exclude ?? []).map((id) => BigInt(id));
  const only = options.only ? Prisma.sql`AND id = ANY(${options.only.map((id) => BigInt(id))}::bigint[])` : Prisma.empty;
  const rows = await tx.$queryRaw<RawSchedule[]>`
    SELECT ${PLAN_COLUMNS} FROM schedules
    WHERE status = 'Active' AND next_run_at <= ${now} AND NOT (id = ANY(${excluded}::bigint[])) ${only}
    ORDER BY next_run_at LIMIT ${options.limit} FOR UPDATE SKIP LOCKED`;
  return rows.map(planFromRaw);
}

/** Writes the advanced plans of many schedules in one statement. */
export async function advanceSchedules(tx: DbOrTx, plans: readonly ({ scheduleId: number } & SchedulePlanWrite)[]): Promise<void> {
  if (plans.length === 0) return;
  await tx.$executeRaw`
    UPDATE schedules AS s SET plan_anchor = v.anchor, next_tick_at = v.tick, next_run_at = v.run, handled_through = v.handled
    FROM unnest(${plans.map((p) => BigInt(p.scheduleId))}::bigint[], ${plans.map((p) => p.planAnchor)}::timestamptz[],
                ${plans.map((p) => p.nextTickAt)}::timestamptz[], ${plans.map((p) => p.nextRunAt)}::timestamptz[],
                ${plans.map((p) => p.handledThrough)}::timestamptz[]) AS v(id, anchor, tick, run, handled)
    WHERE s.id = v.id`;
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
 * Records runs in one statement. A planned tick has at most one run (unique schedule_id, tick):
 * a second claim of a tick throws a unique violation and rolls the caller's transaction back.
 */
export async function insertRuns(tx: DbOrTx, runs: readonly NewRun[]): Promise<void> {
  if (runs.length > 0) await tx.$executeRaw`${RUN_INSERT} ${runColumns(runs)}`;
}

/**
 * Records one run and returns its id. With `skipIfFired`, a tick that already has a run is left
 * alone and null is returned: the run claims the tick, which then fires at most once.
 */
export async function insertRun(tx: DbOrTx, run: NewRun, options: { skipIfFired?: boolean } = {}): Promise<number | null> {
  const conflict = options.skipIfFired ? Prisma.sql`ON CONFLICT (schedule_id, tick) DO NOTHING` : Prisma.empty;
  const rows = await tx.$queryRaw<{ id: bigint }[]>`${RUN_INSERT} ${runColumns([run])} ${conflict} RETURNING id`;
  return rows[0] ? Number(rows[0].id) : null;
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

/** How many runs each schedule holds Queued. */
export async function queuedRunCounts(tx: DbOrTx, scheduleIds: readonly number[]): Promise<Map<number, number>> {
  const rows = await tx.$queryRaw<{ schedule_id: bigint; n: bigint }[]>`
    SELECT schedule_id, count(*) AS n FROM schedule_runs
    WHERE schedule_id = ANY(${scheduleIds.map((id) => BigInt(id))}::bigint[]) AND status = 'Queued' GROUP BY schedule_id`;
  return new Map(rows.map((r) => [Number(r.schedule_id), Number(r.n)]));
}

export async function oldestQueuedRun(tx: DbOrTx, scheduleId: number): Promise<number | null> {
  const row = await tx.scheduleRun.findFirst({ where: { scheduleId: BigInt(scheduleId), status: 'Queued' }, orderBy: { id: 'asc' }, select: { id: true } });
  return row ? Number(row.id) : null;
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

/** Per schedule, the ids of its pipelines that are not terminal, oldest first (the overlap of §14.5). */
export async function unfinishedPipelines(tx: DbOrTx, scheduleIds: readonly number[]): Promise<Map<number, number[]>> {
  const byId = new Map<number, number[]>(scheduleIds.map((id) => [id, []]));
  const rows = await tx.$queryRaw<{ id: bigint; schedule_id: bigint }[]>`
    SELECT id, schedule_id FROM pipelines
    WHERE schedule_id = ANY(${scheduleIds.map((id) => BigInt(id))}::bigint[]) AND status NOT IN ('Completed', 'Failed', 'Cancelled')
    ORDER BY id`;
  for (const r of rows) byId.get(Number(r.schedule_id))?.push(Number(r.id));
  return byId;
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
