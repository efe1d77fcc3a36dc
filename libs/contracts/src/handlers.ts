// Handlers of an application (issue 31, decision 0132): GET /handlers, GET /handlers/{name} and
// PUT /handlers/{name}, which pauses a handler or limits it (maxConcurrent, maxPerSecond).
import {
  arrayOf,
  bool,
  int,
  MAX_ID,
  named,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import { limits } from './limits.js';
import { compile, registerSchemas } from './validate.js';
import type { Validation, Validator } from './validate.js';

// ---------------------------------------------------------------------------------------------
// Types

/**
 * PUT /handlers/{name}: an absent member keeps its stored value (the default when the settings are
 * created: not paused, no limits); null clears a limit.
 */
export interface HandlerSettingsRequest {
  paused?: boolean;
  maxConcurrent?: number | null;
  maxPerSecond?: number | null;
}

/** A handler of the application: its settings and what its stages wait for now. */
export interface HandlerView {
  name: string;
  paused: boolean;
  maxConcurrent: number | null;
  maxPerSecond: number | null;
  /** Whether settings are stored (PUT); false: the defaults, the handler is known from stages or workers. */
  configured: boolean;
  /** Stages waiting: throttled + pending. */
  backlog: number;
  throttled: number;
  pending: number;
  running: number;
  /** Age of the oldest waiting stage in seconds (Throttled: since created; Pending: since dispatched). */
  oldestWaitingSeconds: number | null;
  /** When the settings last changed; null when none are stored. */
  updatedAt: string | null;
}

export interface HandlerList {
  items: HandlerView[];
}

// ---------------------------------------------------------------------------------------------
// Schemas

const maxConcurrent = () => nullable(int(1, limits.handlerMaxConcurrentMax));
const maxPerSecond = () =>
  nullable({ type: 'number', exclusiveMinimum: 0, maximum: limits.handlerMaxPerSecondMax });
const count = () => int(0, MAX_ID);

export const handlerSettingsRequestSchema = named(
  'HandlerSettingsRequest',
  {
    paused: bool('a paused handler gets no new deliveries; its running stages finish'),
    maxConcurrent: {
      ...maxConcurrent(),
      description:
        'most stages of the handler delivered to workers and not yet acknowledged at once, across every worker-gateway; the others wait Pending in its queue; null: no limit',
    },
    maxPerSecond: {
      ...maxPerSecond(),
      description:
        'most dispatches per second (a token bucket of one second of burst); null: no limit',
    },
  },
  { description: 'absent members keep their stored values (new settings: not paused, no limits)' },
);

export const handlerViewSchema = response(
  'HandlerView',
  {
    name: str({ minLength: 1, maxLength: limits.stageHandlerNameChars }),
    paused: bool(),
    maxConcurrent: maxConcurrent(),
    maxPerSecond: maxPerSecond(),
    configured: bool('settings are stored for the handler (PUT); false: the defaults'),
    backlog: { ...count(), description: 'waiting stages: throttled + pending' },
    throttled: {
      ...count(),
      description: 'stages held back by a pause, a rate, a concurrency key or the application cap',
    },
    pending: { ...count(), description: 'stages dispatched to the handler queue, not yet leased' },
    running: count(),
    oldestWaitingSeconds: {
      type: ['number', 'null'],
      minimum: 0,
      description:
        'age of the oldest waiting stage, by the database clock: a Throttled stage since it was created, a Pending one since it was dispatched; null when none waits',
    },
    updatedAt: nullable(utcDateTime()),
  },
  'a handler of the application: its settings and its stages now',
);

export const handlerListSchema = response(
  'HandlerList',
  { items: arrayOf(ref('HandlerView')) },
  'handlers with settings, with Throttled, Pending or Running stages, or registered by an Active worker; by name',
);

registerSchemas(handlerSettingsRequestSchema, handlerViewSchema, handlerListSchema);

// ---------------------------------------------------------------------------------------------
// Validators

const checkSettings: Validator<HandlerSettingsRequest> = compile(handlerSettingsRequestSchema);

/** The limits whose `null` is kept: it clears the limit, where an absent member keeps it. */
const CLEARABLE = ['maxConcurrent', 'maxPerSecond'] as const;

/**
 * The PUT body. Unknown members are ignored, and a `null` `paused` is absent, as everywhere else;
 * a `null` limit stays in the value, since it clears the limit where an absent one keeps it.
 */
export function validateHandlerSettings(data: unknown): Validation<HandlerSettingsRequest> {
  const result = checkSettings(data);
  if (!result.ok) return result;
  const body = data as Record<string, unknown>;
  const value: HandlerSettingsRequest = { ...result.value };
  for (const key of CLEARABLE)
    if (Object.hasOwn(body, key) && body[key] === null) value[key] = null;
  return { ok: true, value };
}

/**
 * `{name}` of a handler, already URL-decoded by the router: 1..300 characters (code points), like
 * `stageHandlerName`, which allows any character; matched exactly (case-sensitive).
 */
export function parseHandlerName(raw: string): Validation<string> {
  const length = [...raw].length;
  if (length < 1)
    return { ok: false, errors: [{ field: 'name', message: 'must have at least 1 character' }] };
  if (length > limits.stageHandlerNameChars) {
    return {
      ok: false,
      errors: [
        { field: 'name', message: `must have at most ${limits.stageHandlerNameChars} characters` },
      ],
    };
  }
  return { ok: true, value: raw };
}
