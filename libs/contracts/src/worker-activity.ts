// Worker activity, read by applications: GET /workers and GET /workers/{workerId}/events
// (issue item 5; decision 0040). The records are the ones the worker protocol writes: bootstrap,
// heartbeats (addendum §5.3, §5.4) and the events of POST /workers/events and shutdown.
import {
  arrayOf,
  enumOf,
  freeObject,
  int,
  MAX_ID,
  MAX_INT32,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import type { JsonObject } from './json.js';
import { limits } from './limits.js';
import type { Validation } from './validate.js';
import { registerSchemas } from './validate.js';
import { WORKER_EVENT_KINDS } from './workers.js';
import type { WorkerEventKind } from './workers.js';

export const WORKER_STATUSES = ['Active', 'Stopped'] as const;
export type WorkerStatus = (typeof WORKER_STATUSES)[number];

/** Longest worker id the service issues or stores (an opaque string). */
export const WORKER_ID_MAX_CHARS = 64;

// ---------------------------------------------------------------------------------------------
// Types

/** The counters of the worker's latest heartbeat that carried them; null when never reported. */
export interface WorkerCounters {
  inFlight: number | null;
  processed: number | null;
  failed: number | null;
}

/** An item of GET /workers. */
export interface WorkerSummary {
  workerId: string;
  instanceId: string;
  workerName: string | null;
  handlers: string[];
  status: WorkerStatus;
  lastHeartbeatAt: string | null;
  counters: WorkerCounters;
  /** Expiry of the worker's current (not superseded) session, past or future; null when none. */
  sessionExpiresAt: string | null;
  createdAt: string;
}

/** An item of GET /workers/{workerId}/events. */
export interface WorkerEventRecord {
  /** Increasing in the order the service recorded the events. */
  id: number;
  kind: WorkerEventKind;
  /** The event's own time (the worker's `at`, or when it was received). */
  at: string;
  message: string | null;
  stageId: number | null;
  pipelineId: number | null;
  data: JsonObject | null;
}

export interface WorkerPage {
  items: WorkerSummary[];
  nextCursor: string | null;
}

export interface WorkerEventPage {
  items: WorkerEventRecord[];
  nextCursor: string | null;
}

// ---------------------------------------------------------------------------------------------
// Response schemas

const counter = () => nullable(int(0, MAX_INT32));
const rid = () => int(1, MAX_ID);

export const workerCountersSchema = response(
  'WorkerCounters',
  { inFlight: counter(), processed: counter(), failed: counter() },
  'counters of the latest heartbeat that carried them; null when never reported',
);

export const workerSummarySchema = response('WorkerSummary', {
  workerId: str({ minLength: 1, maxLength: WORKER_ID_MAX_CHARS }),
  instanceId: str({ minLength: 1, maxLength: limits.instanceIdChars }),
  workerName: nullable(str({ maxLength: limits.workerNameChars })),
  handlers: arrayOf(str({ minLength: 1, maxLength: limits.stageHandlerNameChars })),
  status: enumOf(WORKER_STATUSES),
  lastHeartbeatAt: nullable(utcDateTime()),
  counters: ref('WorkerCounters'),
  sessionExpiresAt: {
    ...nullable(utcDateTime()),
    description: 'expiry of the current (not superseded) session, even when past; null when none',
  },
  createdAt: utcDateTime(),
});

export const workerEventRecordSchema = response('WorkerEventRecord', {
  id: { ...rid(), description: 'increasing in the order the service recorded the events' },
  kind: enumOf(WORKER_EVENT_KINDS),
  at: utcDateTime(),
  message: nullable(str({ maxLength: limits.eventMessageChars })),
  stageId: nullable(rid()),
  pipelineId: nullable(rid()),
  data: nullable(freeObject()),
});

export const workerPageSchema = response(
  'WorkerPage',
  { items: arrayOf(ref('WorkerSummary')), nextCursor: nullable(str({ minLength: 1 })) },
  'workers of the application by createdAt, then workerId, ascending',
);

export const workerEventPageSchema = response(
  'WorkerEventPage',
  { items: arrayOf(ref('WorkerEventRecord')), nextCursor: nullable(str({ minLength: 1 })) },
  'events of one worker, newest first (id descending)',
);

registerSchemas(
  workerCountersSchema,
  workerSummarySchema,
  workerEventRecordSchema,
  workerPageSchema,
  workerEventPageSchema,
);

// ---------------------------------------------------------------------------------------------
// Path parameter

const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * `{workerId}`, already URL-decoded by the router: 1..64 characters without control characters
 * (decision 0040). Any other well-formed id that the application does not own is a 404.
 */
export function parseWorkerId(raw: string): Validation<string> {
  const length = [...raw].length;
  const fail = (message: string): Validation<string> => ({
    ok: false,
    errors: [{ field: 'workerId', message }],
  });
  if (length < 1) return fail('must have at least 1 character');
  if (length > WORKER_ID_MAX_CHARS) {
    return fail(`must have at most ${WORKER_ID_MAX_CHARS} characters`);
  }
  if (CONTROL_CHARACTER.test(raw)) return fail('must not contain control characters');
  return { ok: true, value: raw };
}
