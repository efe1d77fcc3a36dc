/**
 * Schedule plans (addendum §14.1–§14.3): per-kind validation and the ticks of Cron, Interval and
 * Once schedules. Pure: the caller passes `now`, the anchor and the reference instants.
 */
import { limits, type ScheduleKind } from '@po/contracts';
import type { FieldError } from '../errors.js';
import type { CronExpression } from './cron.js';
import { parseCron } from './cron.js';
import { cronTicks } from './cron-ticks.js';
import { isIanaZoneKnown } from './zone.js';

export type PlanKind = ScheduleKind;

export interface PlanInput {
  kind: PlanKind;
  cronExpression?: string | null;
  intervalSeconds?: number | null;
  runAt?: Date | null;
  timeZone: string;
}

/** intervalSeconds bounds (api-spec Limits; upper bound addendum §14.1 [+]). */
export const INTERVAL_SECONDS_MIN: number = limits.intervalSecondsMin;
export const INTERVAL_SECONDS_MAX: number = limits.intervalSecondsMax;
/** A cron expression must have an occurrence within this many years of now (§14.2 [+]). */
export const CRON_HORIZON_YEARS = 5;

/** True for an IANA zone id that the server's ICU knows ("UTC", "Europe/Berlin"); offsets such as "+01:00" are not ids. */
export function isKnownTimeZone(zone: string): boolean {
  return isIanaZoneKnown(zone);
}

export type ResolvedPlan =
  | { type: 'cron'; cron: CronExpression; zone: string }
  | { type: 'every'; ms: number }
  | { type: 'once'; at: number };

/** The plan to compute with, or null when the input cannot be planned (validatePlan says why). */
export function resolvePlan(plan: PlanInput): ResolvedPlan | null {
  switch (plan.kind) {
    case 'Cron': {
      if (typeof plan.cronExpression !== 'string') return null;
      const parsed = parseCron(plan.cronExpression);
      if (!parsed.ok) return null;
      if (parsed.every !== null) return { type: 'every', ms: parsed.every * 1000 };
      return isKnownTimeZone(plan.timeZone)
        ? { type: 'cron', cron: parsed.cron, zone: plan.timeZone }
        : null;
    }
    case 'Interval': {
      const s = plan.intervalSeconds;
      return typeof s === 'number' && Number.isSafeInteger(s) && s > 0
        ? { type: 'every', ms: s * 1000 }
        : null;
    }
    case 'Once': {
      const at = plan.runAt?.getTime();
      return at === undefined || Number.isNaN(at) ? null : { type: 'once', at };
    }
  }
}

const MAX_TIME = 8.64e15;

function toDate(ms: number): Date | null {
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_TIME ? new Date(ms) : null;
}

/** k of the first tick anchor + k·interval (k ≥ 1) strictly after `after`. */
function firstK(anchor: number, ms: number, after: number): number {
  return Math.max(1, Math.floor((after - anchor) / ms) + 1);
}

/**
 * The first tick strictly after `after` (§14.3). Cron: in `timeZone`, with the DST rules of
 * cron-ticks.ts. Interval and `@every`: anchor + k·interval (k ≥ 1). Once: runAt when it is later
 * than `after`. Null when nothing is left, and when the plan is not valid (see validatePlan).
 */
export function nextTick(plan: PlanInput, anchor: Date, after: Date): Date | null {
  const resolved = resolvePlan(plan);
  const ref = after.getTime();
  if (resolved === null || Number.isNaN(ref)) return null;
  switch (resolved.type) {
    case 'once':
      return resolved.at > ref ? new Date(resolved.at) : null;
    case 'every': {
      const start = anchor.getTime();
      return Number.isNaN(start)
        ? null
        : toDate(start + firstK(start, resolved.ms, ref) * resolved.ms);
    }
    case 'cron': {
      const first = cronTicks(resolved.cron, resolved.zone, ref).next();
      return first.done === true ? null : toDate(first.value);
    }
  }
}

/**
 * Every tick in (after, until], ascending: at most `limit` of them, the latest ones when there are
 * more (catch-up wants the latest), and `total`, the number of ticks in the range.
 */
export function ticksBetween(
  plan: PlanInput,
  anchor: Date,
  after: Date,
  until: Date,
  limit: number,
): { ticks: Date[]; total: number } {
  const resolved = resolvePlan(plan);
  const from = after.getTime();
  const to = until.getTime();
  const keep = Math.max(0, Math.floor(limit));
  if (resolved === null || !(to > from)) return { ticks: [], total: 0 };
  switch (resolved.type) {
    case 'once': {
      const inside = resolved.at > from && resolved.at <= to;
      return { ticks: inside && keep > 0 ? [new Date(resolved.at)] : [], total: inside ? 1 : 0 };
    }
    case 'every': {
      const start = anchor.getTime();
      if (Number.isNaN(start)) return { ticks: [], total: 0 };
      const first = firstK(start, resolved.ms, from);
      const lastK = Math.floor((to - start) / resolved.ms);
      const total = Math.max(0, lastK - first + 1);
      const ticks: Date[] = [];
      for (let k = Math.max(first, lastK - keep + 1); k <= lastK; k++)
        ticks.push(new Date(start + k * resolved.ms));
      return { ticks, total };
    }
    case 'cron': {
      const latest: number[] = [];
      let total = 0;
      for (const t of cronTicks(resolved.cron, resolved.zone, from)) {
        if (t > to) break;
        total += 1;
        latest.push(t);
        if (latest.length > keep * 2 + 64) latest.splice(0, latest.length - keep);
      }
      return {
        ticks: latest.slice(Math.max(0, latest.length - keep)).map((t) => new Date(t)),
        total,
      };
    }
  }
}

function addYears(at: Date, years: number): number {
  const d = new Date(at.getTime());
  d.setUTCFullYear(d.getUTCFullYear() + years);
  return d.getTime();
}

const REQUIRED: Record<PlanKind, 'cronExpression' | 'intervalSeconds' | 'runAt'> = {
  Cron: 'cronExpression',
  Interval: 'intervalSeconds',
  Once: 'runAt',
};

/**
 * §14.1 and §14.2 as FieldErrors at `/cronExpression`, `/intervalSeconds`, `/runAt` and
 * `/timeZone`: the kind presence rules (same messages as @po/contracts, so the two deduplicate),
 * the cron dialect, the interval range, the IANA zone, "no occurrence within 5 years" for cron,
 * and the future check of runAt, which applies only when runAt differs from `storedRunAt`.
 */
export function validatePlan(input: PlanInput, now: Date, storedRunAt?: Date | null): FieldError[] {
  const errors: FieldError[] = [];
  const zoneKnown = isKnownTimeZone(input.timeZone);
  if (!zoneKnown)
    errors.push({
      field: '/timeZone',
      message: 'must be a known IANA time zone id, such as Europe/Berlin',
    });
  for (const field of ['cronExpression', 'intervalSeconds', 'runAt'] as const) {
    const present = input[field] != null;
    if (REQUIRED[input.kind] === field && !present) {
      errors.push({ field: `/${field}`, message: `is required when kind is ${input.kind}` });
    } else if (REQUIRED[input.kind] !== field && present) {
      errors.push({
        field: `/${field}`,
        message: `must be absent or null when kind is ${input.kind}`,
      });
    }
  }
  if (input.kind === 'Cron' && typeof input.cronExpression === 'string') {
    const parsed = parseCron(input.cronExpression);
    if (!parsed.ok) {
      errors.push({ field: '/cronExpression', message: parsed.message });
    } else if (parsed.cron !== null && zoneKnown) {
      const first = nextTick(input, now, now);
      if (first === null || first.getTime() > addYears(now, CRON_HORIZON_YEARS)) {
        errors.push({
          field: '/cronExpression',
          message: `has no occurrence within ${CRON_HORIZON_YEARS} years`,
        });
      }
    }
  }
  const interval = input.intervalSeconds;
  if (input.kind === 'Interval' && interval != null) {
    if (
      !Number.isInteger(interval) ||
      interval < INTERVAL_SECONDS_MIN ||
      interval > INTERVAL_SECONDS_MAX
    ) {
      errors.push({
        field: '/intervalSeconds',
        message: `must be an integer from ${INTERVAL_SECONDS_MIN} to ${INTERVAL_SECONDS_MAX}`,
      });
    }
  }
  const runAt = input.runAt;
  if (input.kind === 'Once' && runAt != null) {
    const at = runAt.getTime();
    if (Number.isNaN(at)) {
      errors.push({ field: '/runAt', message: 'must be a valid date-time' });
    } else if (!(storedRunAt != null && storedRunAt.getTime() === at) && !(at > now.getTime())) {
      errors.push({ field: '/runAt', message: 'must be in the future' });
    }
  }
  return errors;
}
