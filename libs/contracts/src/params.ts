// Path and query parameters (addendum §1 "Path parameters", §14.8). Errors name the parameter
// itself (`pipelineId`, `stageId`, `name`, `limit`, `status`), not a JSON Pointer.
import { limits } from './limits.js';
import { SCHEDULE_STATUSES } from './schedules.js';
import type { ScheduleStatus } from './schedules.js';
import type { Validation } from './validate.js';

/** A query value as routers hand it over: absent, once, or repeated. */
export type QueryValue = string | readonly string[] | undefined;

const ID = /^[1-9][0-9]*$/;
const CONTROL_CHARACTER = /\p{Cc}/u;

function fail<T>(field: string, message: string): Validation<T> {
  return { ok: false, errors: [{ field, message }] };
}

/** `{pipelineId}` / `{stageId}`: `^[1-9][0-9]*$`, at most 9007199254740991. */
export function parseId(raw: string, field: 'pipelineId' | 'stageId'): Validation<number> {
  if (!ID.test(raw)) return fail(field, 'must be a positive integer without leading zeros');
  const value = Number(raw);
  if (raw.length > 16 || !Number.isSafeInteger(value)) {
    return fail(field, `must be at most ${Number.MAX_SAFE_INTEGER}`);
  }
  return { ok: true, value };
}

/**
 * `{name}` of a schedule, already URL-decoded by the router: 1..200 characters (code points),
 * no control characters. Matching is case-insensitive; the value keeps the given spelling.
 */
export function parseScheduleName(raw: string): Validation<string> {
  const length = [...raw].length;
  if (length < 1) return fail('name', 'must have at least 1 character');
  if (length > limits.scheduleNameChars) {
    return fail('name', `must have at most ${limits.scheduleNameChars} characters`);
  }
  if (CONTROL_CHARACTER.test(raw)) return fail('name', 'must not contain control characters');
  return { ok: true, value: raw };
}

function single(raw: QueryValue, field: string): Validation<string | undefined> {
  if (raw === undefined || typeof raw === 'string') return { ok: true, value: raw };
  if (raw.length === 1) return { ok: true, value: raw[0] };
  return fail(field, 'must be given at most once');
}

/** Query `limit`: an integer 1..200 in decimal, default 50 when absent. */
export function parseLimit(raw: QueryValue): Validation<number> {
  const one = single(raw, 'limit');
  if (!one.ok) return one;
  if (one.value === undefined) return { ok: true, value: limits.pageSizeDefault };
  const text = one.value;
  const value = Number(text);
  return /^[1-9][0-9]{0,2}$/.test(text) &&
    value >= limits.pageSizeMin &&
    value <= limits.pageSizeMax
    ? { ok: true, value }
    : fail('limit', `must be an integer from ${limits.pageSizeMin} to ${limits.pageSizeMax}`);
}

/** Query `status` of GET /schedules: Active, Paused or Archived; undefined when absent (all). */
export function parseScheduleStatus(raw: QueryValue): Validation<ScheduleStatus | undefined> {
  const one = single(raw, 'status');
  if (!one.ok) return one;
  if (one.value === undefined) return { ok: true, value: undefined };
  const text = one.value;
  const status = SCHEDULE_STATUSES.find((s) => s === text);
  return status === undefined
    ? fail('status', `must be one of: ${SCHEDULE_STATUSES.join(', ')}`)
    : { ok: true, value: status };
}

/** Query `cursor`: an opaque string, undefined when absent. Its meaning is the lister's. */
export function parseCursor(raw: QueryValue): Validation<string | undefined> {
  const one = single(raw, 'cursor');
  if (!one.ok) return one;
  if (one.value === '') return fail('cursor', 'must not be empty');
  return one;
}
