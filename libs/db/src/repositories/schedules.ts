import type { DbOrTx } from '../db-types.js';
import { Prisma, type Schedule, type ScheduleKind, type ScheduleStatus } from '../generated/prisma/client.js';
import { queuedRunCounts } from './schedule-runs.js';

/**
 * Persistence of schedules (addendum §14; their runs are in schedule-runs.ts). Lock order: schedule
 * row, then its pipelines (Replace cancels them), then stages and executions, as everywhere else.
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
 * What a schedule's next tick overlaps with (§14.5), for firing it one schedule at a time: its
 * unfinished pipelines (ids, oldest first: Replace cancels them) and, under Queue, its Queued runs.
 */
export async function scheduleOverlap(tx: DbOrTx, scheduleId: number, policy: string): Promise<{ open: number[]; queued: number }> {
  const open = (await unfinishedPipelines(tx, [scheduleId])).get(scheduleId) ?? [];
  const queued = policy === 'Queue' ? ((await queuedRunCounts(tx, [scheduleId])).get(scheduleId) ?? 0) : 0;
  return { open, queued };
}
