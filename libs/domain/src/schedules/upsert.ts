/**
 * PUT /schedules/{name} normalisation and comparison (addendum §14.7). The body is already
 * validated (@po/contracts validateScheduleUpsert and validatePlan).
 */
import { SCHEDULE_DEFAULTS } from '@po/contracts';
import type { CatchupPolicy } from './catchup.js';
import type { OverlapPolicy } from './overlap.js';
import type { PlanKind } from './plan.js';

export interface ScheduleSettings {
  kind: PlanKind;
  cronExpression: string | null;
  intervalSeconds: number | null;
  runAt: Date | null;
  timeZone: string;
  overlapPolicy: OverlapPolicy;
  catchupPolicy: CatchupPolicy;
  catchupMax: number;
  jitterSeconds: number;
  definition: Record<string, unknown>;
}

export interface ScheduleUpsertBody {
  kind: PlanKind;
  cronExpression?: string | null;
  intervalSeconds?: number | null;
  runAt?: string | null;
  timeZone?: string;
  overlapPolicy?: OverlapPolicy;
  catchupPolicy?: CatchupPolicy;
  catchupMax?: number;
  jitterSeconds?: number;
  definition: Record<string, unknown>;
}

/** Defaults of a new schedule (§14.7); catchupMax, jitterSeconds and timeZone also replace omissions on an existing one. */
export const SCHEDULE_SETTING_DEFAULTS = SCHEDULE_DEFAULTS;

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** An RFC 3339 date-time with offset → instant, fractions below a millisecond truncated; Invalid Date otherwise. */
export function parseInstant(text: string): Date {
  const m = RFC3339.exec(text);
  if (m === null) return new Date(Number.NaN);
  const [, y, mo, d, h, mi, s, frac, sign, oh, om] = m;
  const t = new Date(0);
  t.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  t.setUTCHours(
    Number(h),
    Number(mi),
    Number(s),
    frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0')),
  );
  const offsetMinutes =
    sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  return new Date(t.getTime() - offsetMinutes * 60_000);
}

/** The definition as stored: a shallow copy without `apiKey` (§14.1: ignored and not stored). */
export function storedDefinition(definition: Record<string, unknown>): Record<string, unknown> {
  const { apiKey: _ignored, ...rest } = definition;
  return rest;
}

/**
 * The settings a PUT body stands for. Omitted overlap/catch-up policies keep the stored values
 * (Skip/None when new); omitted catchupMax, jitterSeconds and timeZone take their defaults (10, 0,
 * "UTC"); the fields that do not belong to the kind become null; `definition.apiKey` is dropped.
 */
export function normaliseUpsert(
  body: ScheduleUpsertBody,
  stored: ScheduleSettings | null,
): ScheduleSettings {
  const d = SCHEDULE_SETTING_DEFAULTS;
  return {
    kind: body.kind,
    cronExpression: body.kind === 'Cron' ? (body.cronExpression ?? null) : null,
    intervalSeconds: body.kind === 'Interval' ? (body.intervalSeconds ?? null) : null,
    runAt: body.kind === 'Once' && body.runAt != null ? parseInstant(body.runAt) : null,
    timeZone: body.timeZone ?? d.timeZone,
    overlapPolicy: body.overlapPolicy ?? stored?.overlapPolicy ?? d.overlapPolicy,
    catchupPolicy: body.catchupPolicy ?? stored?.catchupPolicy ?? d.catchupPolicy,
    catchupMax: body.catchupMax ?? d.catchupMax,
    jitterSeconds: body.jitterSeconds ?? d.jitterSeconds,
    definition: storedDefinition(body.definition),
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Equality of JSON values: member order does not matter, a member that is null or undefined
 * equals an omitted one, array order matters. `skip` names top-level members to ignore.
 */
export function jsonValuesEqual(
  a: unknown,
  b: unknown,
  skip: ReadonlySet<string> = new Set(),
): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((v, i) => jsonValuesEqual(v, b[i]))
    );
  }
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) {
      if (skip.has(key)) continue;
      const x = a[key] ?? null;
      const y = b[key] ?? null;
      if (!jsonValuesEqual(x, y)) return false;
    }
    return true;
  }
  return (a ?? null) === (b ?? null) || (Number.isNaN(a) && Number.isNaN(b));
}

function instantOf(d: Date | null): number | null {
  return d === null ? null : d.getTime();
}

/**
 * §14.7 comparison of the normalised request with the stored schedule, as JSON values (member
 * order, whitespace and null-vs-omitted do not matter; runAt is an instant; apiKey is never part
 * of it): 'unchanged', 'trace_only' when only definition.traceId differs, else 'changed'.
 */
export function compareSchedules(
  next: ScheduleSettings,
  stored: ScheduleSettings,
): 'unchanged' | 'trace_only' | 'changed' {
  const settingsEqual =
    next.kind === stored.kind &&
    (next.cronExpression ?? null) === (stored.cronExpression ?? null) &&
    (next.intervalSeconds ?? null) === (stored.intervalSeconds ?? null) &&
    jsonValuesEqual(instantOf(next.runAt), instantOf(stored.runAt)) &&
    next.timeZone === stored.timeZone &&
    next.overlapPolicy === stored.overlapPolicy &&
    next.catchupPolicy === stored.catchupPolicy &&
    next.catchupMax === stored.catchupMax &&
    next.jitterSeconds === stored.jitterSeconds;
  if (
    !settingsEqual ||
    !jsonValuesEqual(next.definition, stored.definition, new Set(['apiKey', 'traceId']))
  ) {
    return 'changed';
  }
  return jsonValuesEqual(next.definition.traceId, stored.definition.traceId)
    ? 'unchanged'
    : 'trace_only';
}
