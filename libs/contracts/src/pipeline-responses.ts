// Pipeline and stage response bodies (api-spec.md "Resources and their fields", addendum §4).
// Every listed field is always present (null when it has no value); the schemas are closed.
import {
  arrayOf,
  bool,
  enumOf,
  int,
  MAX_ID,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import { limits } from './limits.js';
import {
  BACKOFF_KINDS,
  FAILURE_DISPOSITIONS,
  PIPELINE_STATUSES,
  STAGE_STATUSES,
} from './pipelines.js';
import type {
  Backoff,
  FailureDisposition,
  PipelineStatus,
  StageStatus,
} from './pipelines.js';
import { registerSchemas } from './validate.js';

// ---------------------------------------------------------------------------------------------
// Response types (every listed field is present; null when it has no value)

export interface StageOptions {
  runNextIfFailed: boolean;
  retryInterval: number;
  maxRetries: number;
  timeOut: number | null;
  retryOnErrorCodes: string[];
  backoff: Backoff;
  maxRetryInterval: number | null;
  jitter: boolean;
  dependsOn: string[];
  runInParallelWith: string[];
  failIfOutputEmpty: boolean;
  notifyOnFailure: boolean;
  runAsUser: string | null;
  /** Flow control (decision 0132): null when the stage has no key. */
  concurrencyKey: string | null;
  /** The key's limit (1 when a key was given without one); null without a key. */
  concurrencyLimit: number | null;
  /** The effective priority, 1..5, lower first: the stage's own, else its pipeline's, else 3. */
  priority: number;
}

export interface ContextItem {
  key: string;
  value: string;
  valueType: string | null;
  isSensitive: boolean;
  /** Always false in responses. */
  isDeleted: boolean;
}

export interface PipelineKeyword {
  key: string;
  value: string;
}

export interface StageLog {
  id: number;
  stageId: number;
  message: string;
  logLevel: string;
  created: string;
  /** A copy of the original run's log, on a stage carried over by a rerun from the failure. */
  carriedOver: boolean;
}

export interface StageResponse {
  id: number;
  pipelineId: number;
  spanId: string;
  name: string;
  stageHandlerName: string;
  description: string | null;
  status: StageStatus;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  nextRetryAt: string | null;
  input: string;
  output: string | null;
  isSkipped: boolean;
  isEvent: boolean;
  nextStageId: number | null;
  /** The newest logs of the stage (at most 100, and 256 KiB of messages), by created then id. */
  logs: StageLog[];
  /** Older logs than those in `logs` exist: GET /pipelines/{pipelineId}/stages/{stageId}/logs pages through all. */
  logsTruncated: boolean;
  options: StageOptions;
  failureCount: number;
  lastFailedAt: string | null;
  hasFailureHistory: boolean;
  attempt: number;
  retryAttempt: number;
  lastErrorCode: string | null;
  failureDisposition: FailureDisposition | null;
  isTerminal: boolean;
  /** The worker that holds (or last held) the lease of the current execution; null before a lease. */
  workerId: string | null;
  /** When the current execution's lease was granted (its attempt began); null before. */
  attemptStartedAt: string | null;
  /** When the current execution ended (result, lease expiry, timeout, cancellation); null while it lasts. */
  attemptEndedAt: string | null;
  /** The original run's stage this one was carried over from (Completed, not executed again); null otherwise. */
  carriedOverFrom: number | null;
}

export interface PipelineResponse {
  id: number;
  name: string;
  traceId: string;
  status: PipelineStatus;
  createdAt: string;
  finishedAt: string | null;
  applicationId: number;
  stageStatuses: StageStatus[];
  stages: StageResponse[];
  pipelineContextItems: ContextItem[];
  pipelineKeywords: PipelineKeyword[];
  isEvent: boolean;
  idempotencyKey: string | null;
  isTerminal: boolean;
  wasExisting: boolean;
  /** The pipeline this one reruns (POST /pipelines/{pipelineId}/rerun), or null. */
  rerunOf: number | null;
  /** Ids of this pipeline's newest reruns (at most RERUNS_SHOWN), newest first. */
  reruns: number[];
}

/** How many of a pipeline's reruns its response names (the newest). */
export const RERUNS_SHOWN = 20;

export interface IdempotentPipelineCreateResponse {
  pipeline: PipelineResponse;
  created: boolean;
  wasExisting: boolean;
}

export interface StageDto {
  id: number;
  pipelineId: number;
  name: string;
  stageHandlerName: string;
  status: StageStatus;
  createdAt: string;
  isSkipped: boolean;
  isEvent: boolean;
  runNextIfCurrentFailed: boolean;
  input: string;
  nextStageId: number | null;
  finishedAt: string | null;
  startedAt: string | null;
}

export interface AppendStagesResponse {
  stages: StageDto[];
}

export interface StageLogPage {
  items: StageLog[];
  nextCursor: string | null;
}

// ---------------------------------------------------------------------------------------------
// Response schemas

const rid = () => int(1, MAX_ID);
const count = () => int(0, MAX_ID);

export const stageOptionsSchema = response('StageOptions', {
  runNextIfFailed: bool(),
  retryInterval: count(),
  maxRetries: count(),
  timeOut: nullable(int(1, MAX_ID)),
  retryOnErrorCodes: arrayOf(str()),
  backoff: enumOf(BACKOFF_KINDS),
  maxRetryInterval: nullable(int(1, MAX_ID)),
  jitter: bool(),
  dependsOn: arrayOf(str()),
  runInParallelWith: arrayOf(str()),
  failIfOutputEmpty: bool(),
  notifyOnFailure: bool(),
  runAsUser: nullable(str()),
  concurrencyKey: nullable(str({ minLength: 1, maxLength: limits.concurrencyKeyChars })),
  concurrencyLimit: nullable(int(1, limits.concurrencyLimitMax)),
  priority: int(1, 5),
});

export const contextItemSchema = response('ContextItem', {
  key: str({ minLength: 1, maxLength: limits.contextKeyChars }),
  value: str(),
  valueType: nullable(str()),
  isSensitive: bool(),
  isDeleted: bool(),
});

export const pipelineKeywordSchema = response('PipelineKeyword', {
  key: str({ minLength: 1, maxLength: limits.keywordKeyChars }),
  value: str({ minLength: 1, maxLength: limits.keywordValueChars }),
});

export const stageLogSchema = response('StageLog', {
  id: rid(),
  stageId: rid(),
  message: str(),
  logLevel: str({ minLength: 1, maxLength: limits.logLevelChars }),
  created: utcDateTime(),
  carriedOver: bool(
    "a copy of the original run's log, on a stage carried over by a rerun from the failure",
  ),
});

export const stageResponseSchema = response('StageResponse', {
  id: rid(),
  pipelineId: rid(),
  spanId: { type: 'string', pattern: '^[0-9a-f]{16}$' },
  name: str(),
  stageHandlerName: str(),
  description: nullable(str()),
  status: enumOf(STAGE_STATUSES),
  createdAt: utcDateTime(),
  startedAt: nullable(utcDateTime()),
  finishedAt: nullable(utcDateTime()),
  nextRetryAt: nullable(utcDateTime()),
  input: str(),
  output: nullable(str()),
  isSkipped: bool(),
  isEvent: bool(),
  nextStageId: nullable(rid()),
  logs: {
    ...arrayOf(ref('StageLog')),
    description:
      'the newest logs of the stage, ordered by created then id: at most 100, and only as many of those as fit in 262144 bytes of message text (the newest one always)',
  },
  logsTruncated: bool(
    'true when the stage has older logs than those in `logs`; GET /pipelines/{pipelineId}/stages/{stageId}/logs pages through all of them',
  ),
  options: ref('StageOptions'),
  failureCount: count(),
  lastFailedAt: nullable(utcDateTime()),
  hasFailureHistory: bool(),
  attempt: count(),
  retryAttempt: count(),
  lastErrorCode: nullable(str()),
  failureDisposition: nullable(enumOf(FAILURE_DISPOSITIONS)),
  isTerminal: bool(),
  workerId: {
    ...nullable(str({ minLength: 1, maxLength: 64 })),
    description: 'the worker that holds (or last held) the lease of the current execution; null until a lease is granted',
  },
  attemptStartedAt: {
    ...nullable(utcDateTime()),
    description: "when the current execution's lease was granted (its attempt began); null until then",
  },
  attemptEndedAt: {
    ...nullable(utcDateTime()),
    description: 'when the current execution ended (result, lease expiry, timeout or cancellation); null while it lasts or before it began',
  },
  carriedOverFrom: {
    ...nullable(rid()),
    description:
      "the original run's stage this one was carried over from by a rerun from the failure: Completed with that stage's output, timings and logs, never executed in this run; null otherwise",
  },
});

export const pipelineResponseSchema = response('PipelineResponse', {
  id: rid(),
  name: str(),
  traceId: str(),
  status: enumOf(PIPELINE_STATUSES),
  createdAt: utcDateTime(),
  finishedAt: nullable(utcDateTime()),
  applicationId: rid(),
  stageStatuses: arrayOf(enumOf(STAGE_STATUSES)),
  stages: arrayOf(ref('StageResponse')),
  pipelineContextItems: arrayOf(ref('ContextItem')),
  pipelineKeywords: arrayOf(ref('PipelineKeyword')),
  isEvent: bool(),
  idempotencyKey: nullable(str()),
  isTerminal: bool(),
  wasExisting: bool(),
  rerunOf: {
    ...nullable(rid()),
    description:
      'the pipeline this one reruns (POST /pipelines/{pipelineId}/rerun), or null; it may since have been deleted by retention',
  },
  reruns: {
    ...arrayOf(rid(), { maxItems: RERUNS_SHOWN }),
    description: `ids of the newest reruns of this pipeline (at most ${RERUNS_SHOWN}), newest first`,
  },
});

export const idempotentPipelineCreateResponseSchema = response('IdempotentPipelineCreateResponse', {
  pipeline: ref('PipelineResponse'),
  created: bool(),
  wasExisting: bool(),
});

export const stageDtoSchema = response('StageDto', {
  id: rid(),
  pipelineId: rid(),
  name: str(),
  stageHandlerName: str(),
  status: enumOf(STAGE_STATUSES),
  createdAt: utcDateTime(),
  isSkipped: bool(),
  isEvent: bool(),
  runNextIfCurrentFailed: bool(),
  input: str(),
  nextStageId: nullable(rid()),
  finishedAt: nullable(utcDateTime()),
  startedAt: nullable(utcDateTime()),
});

export const appendStagesResponseSchema = response('AppendStagesResponse', {
  stages: arrayOf(ref('StageDto')),
});

export const stageLogPageSchema = response(
  'StageLogPage',
  { items: arrayOf(ref('StageLog')), nextCursor: nullable(str({ minLength: 1 })) },
  'logs of one stage by created, then id, ascending; a page stops early after 1048576 bytes of message text (never before its first log)',
);

registerSchemas(
  stageOptionsSchema,
  contextItemSchema,
  pipelineKeywordSchema,
  stageLogSchema,
  stageResponseSchema,
  pipelineResponseSchema,
  idempotentPipelineCreateResponseSchema,
  stageDtoSchema,
  appendStagesResponseSchema,
  stageLogPageSchema,
);

// ---------------------------------------------------------------------------------------------
// Helpers

