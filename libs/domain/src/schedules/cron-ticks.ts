/**
 * Cron ticks in a time zone (addendum §14.3), day by day rather than minute by minute.
 *
 * The ticks of an expression form one fixed set of instants; every query (next tick, ticks in a
 * range) reads that set in ascending order, so planning never moves backwards and a tick that
 * several local times map to fires once. The set is the union, over the local days whose date
 * matches, of the instants of each matching local time:
 * - a normal local time: its one instant;
 * - a time skipped by a spring-forward gap: one instant, shifted forward by the gap;
 * - a time repeated by a fall-back: the first instant when the hour field is fixed
 *   (`30 1 * * *`), both instants when it is a wildcard or a step (`0 * * * *`).
 */
import type { CronExpression } from './cron.js';
import { cronMatchesDay } from './cron.js';
import {
  civilFromDays,
  DAY_MS,
  firstOfNextMonth,
  instantsOf,
  MAX_OFFSET_MS,
  MINUTE_MS,
  segmentsForDay,
} from './zone.js';

/**
 * Longest stretch of local days without a matching date before the search gives up. It exceeds
 * the longest gap between two matching dates of any expression (29 February: 2096 → 2104).
 */
export const CRON_SEARCH_DAYS = 3_100;
/** Last local day the search visits (JavaScript dates end at ±8.64e15 ms). */
const LAST_DAY = 100_000_000 - 2;

function dayOfWeek(day: number): number {
  return (((day + 4) % 7) + 7) % 7; // 1970-01-01 was a Thursday
}

/** The ticks of local day `day` later than `after`, in no particular order. */
function ticksOfDay(cron: CronExpression, zone: string, day: number, after: number): number[] {
  const segments = segmentsForDay(zone, day);
  const only = segments.length === 1 ? segments[0] : undefined;
  const minOffset = Math.min(...segments.map((s) => s.offset));
  const base = day * DAY_MS;
  const out: number[] = [];
  for (const hour of cron.hours) {
    for (const minute of cron.minutes) {
      const local = base + (hour * 60 + minute) * MINUTE_MS;
      if (local - minOffset <= after) continue; // every instant of this local time is ≤ after
      if (only !== undefined) {
        out.push(local - only.offset);
        continue;
      }
      const { instants } = instantsOf(segments, local);
      const chosen = cron.hourIsFixed ? instants.slice(0, 1) : instants;
      for (const t of chosen) if (t > after) out.push(t);
    }
  }
  return out;
}

/**
 * The ticks of `cron` in `zone` strictly after `after` (epoch ms), ascending, without duplicates.
 * Ends when no date matches for CRON_SEARCH_DAYS days (an impossible expression such as `0 0 30 2 *`).
 */
export function* cronTicks(
  cron: CronExpression,
  zone: string,
  after: number,
): Generator<number, void, undefined> {
  let day = Math.floor((after - MAX_OFFSET_MS) / DAY_MS);
  let lastMatch = day;
  let last = after;
  let pending: number[] = [];
  let head = 0;
  for (;;) {
    // Every instant of local day `day` or later is ≥ day·DAY − MAX_OFFSET: what lies below is final.
    const settled = day * DAY_MS - MAX_OFFSET_MS;
    while (head < pending.length && (pending[head] as number) < settled) {
      const t = pending[head++] as number;
      if (t > last) {
        last = t;
        yield t;
      }
    }
    if (head === pending.length && (day - lastMatch > CRON_SEARCH_DAYS || day > LAST_DAY)) return;
    const date = civilFromDays(day);
    if (!cron.months.includes(date.month)) {
      day = firstOfNextMonth(date.year, date.month);
      continue;
    }
    if (cronMatchesDay(cron, date.day, dayOfWeek(day))) {
      lastMatch = day;
      const ticks = ticksOfDay(cron, zone, day, last);
      if (ticks.length > 0) {
        pending = pending
          .slice(head)
          .concat(ticks)
          .sort((a, b) => a - b);
        head = 0;
      }
    }
    day += 1;
  }
}
