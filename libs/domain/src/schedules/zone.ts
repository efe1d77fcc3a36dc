/**
 * Time-zone arithmetic on top of Intl (full ICU): UTC offsets, the offset segments around a local
 * day, and the mapping of a local wall-clock time to the instants that show it. The results are
 * memoised (bounded caches); every function is still a pure function of its arguments.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** No zone offset, historic ones included, reaches this far from UTC (real ones stay within ±15:57). */
export const MAX_OFFSET_MS = 16 * HOUR_MS;

/** Offsets are sampled on this grid; zones never change offset twice within one step. */
const GRID_MS = 4 * HOUR_MS;
const CACHE_LIMIT = 100_000;

const formatters = new Map<string, Intl.DateTimeFormat>();
const gridOffsets = new Map<string, number>();
const daySegments = new Map<string, readonly Segment[]>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    remember(formatters, zone, f, 1000);
  }
  return f;
}

function remember<V>(cache: Map<string, V>, key: string, value: V, limit = CACHE_LIMIT): V {
  if (cache.size >= limit) cache.clear();
  cache.set(key, value);
  return value;
}

/** Wall-clock fields of `instant` in `zone`, as "local milliseconds" (the fields read as if UTC), whole seconds. */
export function localMs(zone: string, instant: number): number {
  const fields: Record<string, string> = {};
  for (const part of formatter(zone).formatToParts(instant)) fields[part.type] = part.value;
  const d = new Date(0);
  d.setUTCFullYear(Number(fields.year), Number(fields.month) - 1, Number(fields.day));
  d.setUTCHours(Number(fields.hour), Number(fields.minute), Number(fields.second), 0);
  return d.getTime();
}

/** UTC offset of `zone` at `instant`, in milliseconds (local = instant + offset). */
export function offsetAt(zone: string, instant: number): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return localMs(zone, whole) - whole;
}

function gridOffset(zone: string, k: number): number {
  const key = `${zone}|${k}`;
  const cached = gridOffsets.get(key);
  return cached ?? remember(gridOffsets, key, offsetAt(zone, k * GRID_MS));
}

/** A stretch of constant offset: instants in [start, end). */
export interface Segment {
  start: number;
  end: number;
  offset: number;
}

/** The first instant (whole second) in (lo, hi] whose offset is not `before`. */
function transitionIn(zone: string, lo: number, hi: number, before: number): number {
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (offsetAt(zone, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** Offset segments covering every instant whose local date could be local day `day` (days since 1970-01-01). */
export function segmentsForDay(zone: string, day: number): readonly Segment[] {
  const key = `${zone}|${day}`;
  const cached = daySegments.get(key);
  if (cached !== undefined) return cached;
  const from = Math.floor((day * DAY_MS - MAX_OFFSET_MS) / GRID_MS);
  const to = Math.ceil(((day + 1) * DAY_MS + MAX_OFFSET_MS) / GRID_MS);
  const segments: Segment[] = [];
  let current: Segment = { start: -Infinity, end: Infinity, offset: gridOffset(zone, from) };
  for (let k = from; k < to; k++) {
    const next = gridOffset(zone, k + 1);
    if (next === current.offset) continue;
    const at = transitionIn(zone, k * GRID_MS, (k + 1) * GRID_MS, current.offset);
    segments.push({ ...current, end: at });
    current = { start: at, end: Infinity, offset: next };
  }
  segments.push(current);
  return remember(daySegments, key, segments);
}

/**
 * The instants that show local time `local` (local milliseconds), ascending: one normally, two in a
 * fall-back overlap. A time skipped by a spring-forward gap maps to one instant, shifted forward by
 * the gap ("compatible" disambiguation): it is read with the offset in force before the gap.
 * `shifted` tells which case applied.
 */
export function instantsOf(
  segments: readonly Segment[],
  local: number,
): { instants: number[]; shifted: boolean } {
  const instants: number[] = [];
  for (const s of segments) {
    const t = local - s.offset;
    if (t >= s.start && t < s.end) instants.push(t);
  }
  if (instants.length > 0) return { instants, shifted: false };
  for (let i = 1; i < segments.length; i++) {
    const prev = segments[i - 1] as Segment;
    const next = segments[i] as Segment;
    if (local >= next.start + prev.offset && local < next.start + next.offset) {
      return { instants: [local - prev.offset], shifted: true };
    }
  }
  // Not reachable when `segments` comes from segmentsForDay of the local date of `local`.
  const first = segments[0];
  return { instants: first === undefined ? [] : [local - first.offset], shifted: false };
}

/** Days since 1970-01-01 → civil year, month (1-12), day (1-31) (proleptic Gregorian). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Days since 1970-01-01 of the first day of the next month. */
export function firstOfNextMonth(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(month === 12 ? year + 1 : year, month === 12 ? 0 : month, 1);
  return Math.round(d.getTime() / DAY_MS);
}

/** True when Intl knows `zone` and it has the shape of an IANA id (not an offset like "+01:00"). */
export function isIanaZoneKnown(zone: string): boolean {
  if (
    zone.length === 0 ||
    zone.length > 64 ||
    !/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/.test(zone)
  ) {
    return false;
  }
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}
