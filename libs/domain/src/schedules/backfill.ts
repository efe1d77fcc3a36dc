/**
 * The ticks of a backfill (POST /schedules/{name}/backfill, issue 11): every tick of a schedule's
 * plan inside [from, to), oldest first, at most `max` of them. Pure, like plan.ts, whose rules it
 * follows: Cron ticks in the schedule's zone with the DST rules of §14.3 (the same cronTicks
 * walk), Interval and `@every` ticks `anchor + k × interval` for every integer k (before the
 * anchor too), a Once schedule its runAt.
 *
 * A range with more than `max` ticks is refused with their number, which is computed without
 * enumerating them where arithmetic can (Interval, @every, Once). A Cron range is walked, but only
 * so far: past COUNT_TICKS_LIMIT ticks or COUNT_DAYS_LIMIT days with ticks the count stops and is
 * a lower bound (`exact: false`), so a request for ten thousand years of minutes costs no more
 * than a bounded walk.
 */
import { limits } from '@po/contracts';
import { cronTicks } from './cron-ticks.js';
import { resolvePlan, type PlanInput } from './plan.js';
import type { CronExpression } from './cron.js';
import { DAY_MS } from './zone.js';

/** Ticks one backfill request may cover (issue 11). */
export const BACKFILL_MAX_TICKS: number = limits.backfillTicks;
/** A Cron count stops after this many ticks (a dense expression: ~1.5 µs a tick)… */
export const COUNT_TICKS_LIMIT = 100_000;
/** …or after ticks on this many distinct days (a sparse one: each day costs its zone segments). */
export const COUNT_DAYS_LIMIT = 1_500;

export type BackfillTicks =
  /** Every tick in [from, to), ascending; empty for an empty range. */
  | { ok: true; ticks: Date[] }
  /** More than `max` ticks: `count` of them, or at least `count` when `exact` is false. */
  | { ok: false; reason: 'too_many'; count: number; exact: boolean }
  /** The stored plan cannot be computed (an unknown zone, an expression that no longer parses). */
  | { ok: false; reason: 'not_plannable' };

/** `anchor + k × ms` in [from, to), for every integer k: counted, then listed when few enough. */
function everyTicks(
  anchor: number,
  ms: number,
  from: number,
  to: number,
  max: number,
): BackfillTicks {
  const first = Math.ceil((from - anchor) / ms);
  const last = Math.ceil((to - anchor) / ms) - 1;
  const count = Math.max(0, last - first + 1);
  if (count > max) return { ok: false, reason: 'too_many', count, exact: true };
  const ticks: Date[] = [];
  for (let k = first; k <= last; k++) ticks.push(new Date(anchor + k * ms));
  return { ok: true, ticks };
}

/** Cron ticks in [from, to): listed up to `max`, then only counted, within the walk limits. */
function cronRange(
  cron: CronExpression,
  zone: string,
  from: number,
  to: number,
  max: number,
): BackfillTicks {
  const ticks: number[] = [];
  let count = 0;
  let days = 0;
  let lastDay = Number.NaN;
  // cronTicks yields ticks strictly after its argument; ticks are whole minutes, so from - 1 includes from.
  for (const t of cronTicks(cron, zone, from - 1)) {
    if (t >= to) break;
    count += 1;
    if (count <= max) ticks.push(t);
    const day = Math.floor(t / DAY_MS);
    if (day !== lastDay) {
      days += 1;
      lastDay = day;
    }
    if (count > max && (count >= COUNT_TICKS_LIMIT || days >= COUNT_DAYS_LIMIT)) {
      return { ok: false, reason: 'too_many', count, exact: false };
    }
  }
  if (count > max) return { ok: false, reason: 'too_many', count, exact: true };
  return { ok: true, ticks: ticks.map((t) => new Date(t)) };
}

/**
 * The ticks of `plan` in [from, to) (from inclusive, to exclusive), ascending, when there are at
 * most `max`. `anchor` is the Interval/@every anchor (the schedule's planAnchor); Cron and Once
 * ignore it. No jitter: a backfill tick is the unjittered instant of the plan. An empty or
 * reversed range has no ticks.
 */
export function backfillTicks(
  plan: PlanInput,
  anchor: Date,
  from: Date,
  to: Date,
  max = BACKFILL_MAX_TICKS,
): BackfillTicks {
  const resolved = resolvePlan(plan);
  if (resolved === null) return { ok: false, reason: 'not_plannable' };
  const lo = from.getTime();
  const hi = to.getTime();
  const limit = Math.max(0, Math.floor(max));
  if (!(hi > lo)) return { ok: true, ticks: [] };
  switch (resolved.type) {
    case 'once': {
      const inside = resolved.at >= lo && resolved.at < hi;
      if (inside && limit < 1) return { ok: false, reason: 'too_many', count: 1, exact: true };
      return { ok: true, ticks: inside ? [new Date(resolved.at)] : [] };
    }
    case 'every': {
      const start = anchor.getTime();
      return Number.isNaN(start)
        ? { ok: false, reason: 'not_plannable' }
        : everyTicks(start, resolved.ms, lo, hi, limit);
    }
    case 'cron':
      return cronRange(resolved.cron, resolved.zone, lo, hi, limit);
  }
}
