// POST /schedules/{name}/backfill (issue 11, decision 0087): the request, its validator and the
// response. Beyond the spec; docs/schedules.md "Backfill".
import { toUtcMillis } from './datetime.js';
import { arrayOf, dateTime, enumOf, int, named, ref, response } from './fragments.js';
import type { NonNullJsonValue } from './json.js';
import { limits } from './limits.js';
// Registers ScheduleRun, which the response refers to.
import { OVERLAP_POLICIES, type OverlapPolicy, type ScheduleRun } from './schedules.js';
import { checker, registerSchemas } from './validate.js';
import type { Validation } from './validate.js';

export interface ScheduleBackfillRequest {
  /** RFC 3339 with an offset: the range is [from, to). */
  from: string;
  /** Not before `from`; equal to it is an empty range. */
  to: string;
  /** Default: the schedule's overlapPolicy. */
  overlapPolicy?: OverlapPolicy;
  /** Replaces the first stage's input of each pipeline the request creates, as trigger does. */
  input?: NonNullJsonValue;
}

export interface ScheduleBackfillResponse {
  /** Ticks of the schedule in [from, to). */
  ticks: number;
  /** Runs this request created (0 when an identical request ran before). */
  created: number;
  /** The Backfill runs of those ticks, new and earlier ones, oldest tick first. */
  runs: ScheduleRun[];
}

export const scheduleBackfillRequestSchema = named(
  'ScheduleBackfillRequest',
  {
    from: dateTime('first instant of the range, inclusive'),
    to: dateTime('end of the range, exclusive; not before `from`'),
    overlapPolicy: enumOf(OVERLAP_POLICIES, "default: the schedule's overlapPolicy"),
    input: {
      maxBytes: limits.stageInputBytes,
      description:
        'replaces the first stage input of each pipeline the request creates: a string as is, any other non-null value as compact JSON',
    },
  },
  { required: ['from', 'to'] },
);

export const scheduleBackfillResponseSchema = response('ScheduleBackfillResponse', {
  ticks: int(0, limits.backfillTicks),
  created: int(0, limits.backfillTicks),
  runs: arrayOf(ref('ScheduleRun'), { maxItems: limits.backfillTicks }),
});

registerSchemas(scheduleBackfillRequestSchema, scheduleBackfillResponseSchema);

const checkBackfill = checker(scheduleBackfillRequestSchema);

/**
 * The backfill body: `from` and `to` required RFC 3339 date-times with an offset, `to` not before
 * `from` (400 at `/to`), `overlapPolicy` one of the four, `input` as in a trigger. Whether the
 * range holds too many ticks depends on the schedule: the operation checks it.
 */
export function validateScheduleBackfill(data: unknown): Validation<ScheduleBackfillRequest> {
  const result = checkBackfill(data);
  if (result.errors.length > 0) return { ok: false, errors: result.errors };
  const body = result.data as ScheduleBackfillRequest;
  if (toUtcMillis(body.to) < toUtcMillis(body.from)) {
    return { ok: false, errors: [{ field: '/to', message: 'must not be before from' }] };
  }
  return { ok: true, value: body };
}
