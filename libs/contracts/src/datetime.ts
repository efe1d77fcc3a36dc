// Date-times (addendum §1 "Times"): requests accept an RFC 3339 date-time that has an offset and
// are normalised to UTC milliseconds; responses always write `YYYY-MM-DDTHH:mm:ss.sssZ`.

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Pattern a response date-time must match: UTC, exactly three fractional digits, `Z`. */
export const UTC_DATE_TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function parse(s: string): number | undefined {
  const m = RFC3339.exec(s);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, sec, frac, zulu, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(sec);
  if (month < 1 || month > 12) return undefined;
  if (day < 1 || day > daysInMonth(year, month)) return undefined;
  // A leap second (:60) has no representation in JavaScript time and is rejected.
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zulu === undefined) {
    const offH = Number(oh);
    const offM = Number(om);
    if (offH > 23 || offM > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM);
  }
  // Fractions finer than a millisecond are truncated.
  const millis = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0'));
  const t = new Date(0);
  t.setUTCFullYear(year, month - 1, day);
  t.setUTCHours(hour, minute, second, millis);
  return t.getTime() - offsetMinutes * 60_000;
}

/**
 * Earliest and latest instants a request date-time may name: years 1 to 9999 in UTC, the range
 * RFC 3339 can write in UTC and every store and client here handles (year 0 made the database
 * round trip fail with a 500).
 */
export const MIN_DATE_TIME = '0001-01-01T00:00:00.000Z';
export const MAX_DATE_TIME = '9999-12-31T23:59:59.999Z';
const MIN_MILLIS = Date.parse(MIN_DATE_TIME);
const MAX_MILLIS = Date.parse(MAX_DATE_TIME);

/** What is wrong with a request date-time: not RFC 3339 with an offset, or outside the bounds. */
export function dateTimeProblem(s: string): 'format' | 'range' | null {
  const ms = parse(s);
  if (ms === undefined) return 'format';
  return ms < MIN_MILLIS || ms > MAX_MILLIS ? 'range' : null;
}

/** True when `s` is an RFC 3339 date-time with an offset (`Z` or `±hh:mm`) within the bounds. */
export function isRfc3339DateTime(s: string): boolean {
  return dateTimeProblem(s) === null;
}

/**
 * UTC epoch milliseconds of an RFC 3339 date-time with an offset, within the bounds.
 * Throws a RangeError for anything else (validate the body first).
 */
export function toUtcMillis(s: string): number {
  if (!isRfc3339DateTime(s)) {
    throw new RangeError(`not an RFC 3339 date-time with an offset, ${MIN_DATE_TIME} to ${MAX_DATE_TIME}: ${s}`);
  }
  return parse(s)!;
}

/** A response date-time: `YYYY-MM-DDTHH:mm:ss.sssZ`, always UTC. */
export function formatDateTime(d: Date): string {
  return d.toISOString();
}

/** `formatDateTime` for nullable columns: null stays null. */
export function formatNullableDateTime(d: Date | null | undefined): string | null {
  return d == null ? null : d.toISOString();
}

/** Normalises a request date-time to the response form (`2025-03-01T12:00:00.000Z`). */
export function normaliseDateTime(s: string): string {
  return new Date(toUtcMillis(s)).toISOString();
}
