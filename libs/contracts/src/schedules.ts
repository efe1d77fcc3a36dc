// Schedules: the upsert and trigger requests, the Schedule, ScheduleRun, page and trigger
// responses (api-spec.md "Schedule resources", addendum §5.5, §5.6, §5.7, §14). Backfill:
// schedule-backfill.ts.
import { toUtcMillis } from './datetime.js';
import {
  arrayOf,
  dateTime,
  enumOf,
  int,
  MAX_ID,
  named,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import type { NonNullJsonValue } from './json.js';
import { limits } from './limits.js';
import { PIPELINE_STATUSES } from './pipelines.js';
import type { PipelineDefinition, PipelineStatus } from './pipelines.js';
// Registers the response schemas a Schedule and a trigger response refer to.
import './pipeline-responses.js';
import type { PipelineResponse } from './pipeline-responses.js';
import { checker, compile, dedupeErrors, registerSchemas } from './validate.js';
import type { FieldError, Validation, Validator } from './validate.js';

// ---------------------------------------------------------------------------------------------
// Enumerations

export const SCHEDULE_KINDS = ['Cron', 'Interval', 'Once'] as const;
export type ScheduleKind = (typeof SCHEDULE_KINDS)[number];

export const SCHEDULE_STATUSES = ['Active', 'Paused', 'Archived'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

export const OVERLAP_POLICIES = ['Skip', 'Queue', 'Replace', 'Allow'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export const CATCHUP_POLICIES = ['None', 'One', 'All'] as const;
export type CatchupPolicy = (typeof CATCHUP_POLICIES)[number];

/** Backfill: a run POST /schedules/{name}/backfill made for a tick of a past (or future) range. */
export const SCHEDULE_RUN_TRIGGERS = ['Scheduled', 'Manual', 'Catchup', 'Backfill'] as const;
export type ScheduleRunTrigger = (typeof SCHEDULE_RUN_TRIGGERS)[number];

export const SCHEDULE_RUN_STATUSES = ['Created', 'Queued', 'Skipped', 'Failed'] as const;
export type ScheduleRunStatus = (typeof SCHEDULE_RUN_STATUSES)[number];

/** How many upcoming fire instants a Schedule lists (`nextRuns`). */
export const SCHEDULE_NEXT_RUNS = 5;

export const SCHEDULE_HEALTH_STATES = ['idle', 'failing', 'degraded', 'healthy'] as const;
export type ScheduleHealthState = (typeof SCHEDULE_HEALTH_STATES)[number];

/** Settings a new schedule takes when omitted (addendum §14.7). */
export const SCHEDULE_DEFAULTS = {
  timeZone: 'UTC',
  overlapPolicy: 'Skip',
  catchupPolicy: 'None',
  catchupMax: 10,
  jitterSeconds: 0,
} as const satisfies {
  timeZone: string;
  overlapPolicy: OverlapPolicy;
  catchupPolicy: CatchupPolicy;
  catchupMax: number;
  jitterSeconds: number;
};

// ---------------------------------------------------------------------------------------------
// Types

export interface ScheduleUpsertRequest {
  kind: ScheduleKind;
  cronExpression?: string;
  timeZone?: string;
  intervalSeconds?: number;
  /** RFC 3339 with an offset; see `toUtcMillis`. */
  runAt?: string;
  overlapPolicy?: OverlapPolicy;
  catchupPolicy?: CatchupPolicy;
  catchupMax?: number;
  jitterSeconds?: number;
  /** Validated like pipeline creation; `definition.apiKey` is ignored and absent here. */
  definition: PipelineDefinition;
}

export interface ScheduleTriggerRequest {
  /** Replaces the first stage's input: a string as is, another value as compact JSON. */
  input?: NonNullJsonValue;
}

export interface ScheduleHealth {
  windowSize: number;
  total: number;
  completed: number;
  failed: number;
  cancelled: number;
  running: number;
  skipped: number;
  lastFailureAt: string | null;
  state: ScheduleHealthState;
}

export interface Schedule {
  id: number;
  applicationId: number;
  name: string;
  status: ScheduleStatus;
  kind: ScheduleKind;
  cronExpression: string | null;
  timeZone: string;
  intervalSeconds: number | null;
  runAt: string | null;
  /** As last stored, without `apiKey`. */
  definition: PipelineDefinition;
  definitionVersion: number;
  overlapPolicy: OverlapPolicy;
  catchupPolicy: CatchupPolicy;
  catchupMax: number;
  jitterSeconds: number;
  createdAt: string;
  updatedAt: string;
  nextRunAt: string | null;
  /** The next fire instants (at most SCHEDULE_NEXT_RUNS), jitter applied; [] unless Active. */
  nextRuns: string[];
  lastRunAt: string | null;
  lastRunStatus: PipelineStatus | ScheduleRunStatus | null;
  lastPipelineId: number | null;
  health: ScheduleHealth;
}

export interface ScheduleRun {
  id: number;
  scheduleId: number;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduledFor: string;
  createdAt: string;
  pipelineId: number | null;
  pipelineStatus: PipelineStatus | null;
  reason: string | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface ScheduleTriggerResponse {
  run: ScheduleRun;
  pipeline: PipelineResponse;
}

// ---------------------------------------------------------------------------------------------
// Request schemas

export const scheduleUpsertRequestSchema = named(
  'ScheduleUpsertRequest',
  {
    kind: enumOf(SCHEDULE_KINDS),
    cronExpression: str({
      maxLength: limits.cronExpressionChars,
      description: 'standard 5-field cron, or @every <duration>, @hourly, @daily, @midnight',
    }),
    timeZone: { ...str({ description: 'IANA zone id' }), default: SCHEDULE_DEFAULTS.timeZone },
    intervalSeconds: nullable(int(limits.intervalSecondsMin, limits.intervalSecondsMax)),
    runAt: nullable(dateTime('required for Once; must be in the future')),
    overlapPolicy: enumOf(OVERLAP_POLICIES),
    catchupPolicy: enumOf(CATCHUP_POLICIES),
    catchupMax: {
      ...int(limits.catchupMaxMin, limits.catchupMaxMax),
      default: SCHEDULE_DEFAULTS.catchupMax,
    },
    jitterSeconds: {
      ...int(0, limits.jitterSecondsMax),
      default: SCHEDULE_DEFAULTS.jitterSeconds,
    },
    definition: ref('PipelineDefinition'),
  },
  { required: ['kind', 'definition'] },
);

export const scheduleTriggerRequestSchema = named('ScheduleTriggerRequest', {
  input: {
    maxBytes: limits.stageInputBytes,
    description:
      'replaces the first stage input: a string as is, any other non-null value as compact JSON',
  },
});

// ---------------------------------------------------------------------------------------------
// Response schemas

const rid = () => int(1, MAX_ID);
const uniqueValues = (...lists: readonly (readonly string[])[]) => [...new Set(lists.flat())];

export const scheduleHealthSchema = response('ScheduleHealth', {
  windowSize: int(1, MAX_ID),
  total: int(0, MAX_ID),
  completed: int(0, MAX_ID),
  failed: int(0, MAX_ID),
  cancelled: int(0, MAX_ID),
  running: int(0, MAX_ID),
  skipped: int(0, MAX_ID),
  lastFailureAt: nullable(utcDateTime()),
  state: enumOf(SCHEDULE_HEALTH_STATES),
});

export const scheduleSchema = response('Schedule', {
  id: rid(),
  applicationId: rid(),
  name: str({ minLength: 1, maxLength: limits.scheduleNameChars }),
  status: enumOf(SCHEDULE_STATUSES),
  kind: enumOf(SCHEDULE_KINDS),
  cronExpression: nullable(str()),
  timeZone: str(),
  intervalSeconds: nullable(int(limits.intervalSecondsMin, limits.intervalSecondsMax)),
  runAt: nullable(utcDateTime()),
  definition: ref('StoredPipelineDefinition'),
  definitionVersion: rid(),
  overlapPolicy: enumOf(OVERLAP_POLICIES),
  catchupPolicy: enumOf(CATCHUP_POLICIES),
  catchupMax: int(limits.catchupMaxMin, limits.catchupMaxMax),
  jitterSeconds: int(0, limits.jitterSecondsMax),
  createdAt: utcDateTime(),
  updatedAt: utcDateTime(),
  nextRunAt: nullable(utcDateTime()),
  nextRuns: {
    ...arrayOf(utcDateTime(), { maxItems: SCHEDULE_NEXT_RUNS }),
    description: `the next ${SCHEDULE_NEXT_RUNS} instants the schedule fires at, after now, ascending, jitter applied as the scheduler applies it; [] when Paused, Archived or nothing is left`,
  },
  lastRunAt: nullable(utcDateTime()),
  lastRunStatus: nullable(enumOf(uniqueValues(PIPELINE_STATUSES, SCHEDULE_RUN_STATUSES))),
  lastPipelineId: nullable(rid()),
  health: ref('ScheduleHealth'),
});

export const scheduleRunSchema = response('ScheduleRun', {
  id: rid(),
  scheduleId: rid(),
  trigger: enumOf(SCHEDULE_RUN_TRIGGERS),
  status: enumOf(SCHEDULE_RUN_STATUSES),
  scheduledFor: utcDateTime(),
  createdAt: utcDateTime(),
  pipelineId: nullable(rid()),
  pipelineStatus: nullable(enumOf(PIPELINE_STATUSES)),
  reason: nullable(str()),
});

export const schedulePageSchema = response('SchedulePage', {
  items: arrayOf(ref('Schedule')),
  nextCursor: nullable(str()),
});

export const scheduleRunPageSchema = response('ScheduleRunPage', {
  items: arrayOf(ref('ScheduleRun')),
  nextCursor: nullable(str()),
});

export const scheduleTriggerResponseSchema = response('ScheduleTriggerResponse', {
  run: ref('ScheduleRun'),
  pipeline: ref('PipelineResponse'),
});

registerSchemas(
  scheduleUpsertRequestSchema,
  scheduleTriggerRequestSchema,
  scheduleHealthSchema,
  scheduleSchema,
  scheduleRunSchema,
  schedulePageSchema,
  scheduleRunPageSchema,
  scheduleTriggerResponseSchema,
);

// ---------------------------------------------------------------------------------------------
// Kind rules (addendum §14.1). Cron parsing and the IANA zone check belong to the scheduler.

const KIND_FIELDS: Record<ScheduleKind, { required: string; absent: [string, string] }> = {
  Cron: { required: 'cronExpression', absent: ['intervalSeconds', 'runAt'] },
  Interval: { required: 'intervalSeconds', absent: ['cronExpression', 'runAt'] },
  Once: { required: 'runAt', absent: ['cronExpression', 'intervalSeconds'] },
};

function isKind(v: unknown): v is ScheduleKind {
  return (SCHEDULE_KINDS as readonly unknown[]).includes(v);
}

function kindErrorsOf(body: Record<string, unknown>): FieldError[] {
  const kind = body.kind;
  if (!isKind(kind)) return [];
  const rule = KIND_FIELDS[kind];
  const errors: FieldError[] = [];
  if (body[rule.required] == null) {
    errors.push({ field: `/${rule.required}`, message: `is required when kind is ${kind}` });
  }
  for (const field of rule.absent) {
    if (body[field] != null) {
      errors.push({ field: `/${field}`, message: `must be absent or null when kind is ${kind}` });
    }
  }
  return errors;
}

/**
 * Presence rules per kind (addendum §14.1): Cron needs cronExpression, Interval needs
 * intervalSeconds, Once needs runAt; the other two must be absent or null.
 * `validateScheduleUpsert` already applies them.
 */
export function scheduleKindErrors(body: ScheduleUpsertRequest): FieldError[] {
  return kindErrorsOf(body as unknown as Record<string, unknown>);
}

/**
 * The future check of a Once `runAt` (addendum §14.1): runAt must be later than `now` (epoch ms),
 * unless it equals the stored runAt of the schedule as an instant.
 */
export function scheduleRunAtErrors(
  body: ScheduleUpsertRequest,
  context: { now: number; storedRunAt?: number | null },
): FieldError[] {
  if (body.kind !== 'Once' || body.runAt === undefined) return [];
  const runAt = toUtcMillis(body.runAt);
  if (context.storedRunAt != null && runAt === context.storedRunAt) return [];
  return runAt > context.now ? [] : [{ field: '/runAt', message: 'must be in the future' }];
}

// ---------------------------------------------------------------------------------------------
// Validators

const checkUpsert = checker(scheduleUpsertRequestSchema);

/** Schema rules plus the kind presence rules, all errors together. */
export function validateScheduleUpsert(data: unknown): Validation<ScheduleUpsertRequest> {
  const result = checkUpsert(data);
  const body = result.data;
  const kindErrors =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? kindErrorsOf(body as Record<string, unknown>)
      : [];
  const errors = dedupeErrors([...result.errors, ...kindErrors]);
  return errors.length === 0
    ? { ok: true, value: body as ScheduleUpsertRequest }
    : { ok: false, errors };
}

const triggerValidator: Validator<ScheduleTriggerRequest> = compile(scheduleTriggerRequestSchema);

/**
 * The trigger body is optional: `undefined` (no body, or an empty one) is `{}`. A body that is
 * present but not a JSON object is an error at `""`.
 */
export function validateScheduleTrigger(data: unknown): Validation<ScheduleTriggerRequest> {
  return data === undefined ? { ok: true, value: {} } : triggerValidator(data);
}
