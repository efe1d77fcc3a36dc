// The worker protocol: bootstrap, heartbeat, events, shutdown, pull, ack, lease, result, and the
// StageNextMessage payload (api-spec.md "Worker protocol resources", addendum §5.1-§5.4, §12, §13).
import {
  arrayOf,
  bool,
  dateTime,
  enumOf,
  freeObject,
  id,
  int,
  MAX_ID,
  named,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import type { JsonSchema } from './fragments.js';
import type { JsonObject } from './json.js';
import { limits } from './limits.js';
import { contextItemInputSchema, type ContextItemInput, type StageInfo } from './pipelines.js';
// Registers StageOptions and ContextItem, which StageNextMessage refers to.
import './pipeline-responses.js';
import type { ContextItem, StageOptions } from './pipeline-responses.js';
import { registerSchemas } from './validate.js';

// ---------------------------------------------------------------------------------------------
// Enumerations

export const WORKER_EVENT_KINDS = [
  'started',
  'stopping',
  'stopped',
  'stage_started',
  'stage_completed',
  'stage_failed',
  'lease_lost',
  'error',
  'custom',
] as const;
export type WorkerEventKind = (typeof WORKER_EVENT_KINDS)[number];

export const LEASE_REFUSAL_REASONS = [
  'pipeline_cancelled',
  'stage_terminal',
  'stale_execution',
  'lease_held',
  'lease_expired',
  'not_owner',
] as const;
export type LeaseRefusalReason = (typeof LEASE_REFUSAL_REASONS)[number];

// ---------------------------------------------------------------------------------------------
// Request types

export interface BootstrapRequest {
  instanceId: string;
  workerName?: string;
  handlers?: string[];
  sdkVersion?: string;
  hostname?: string;
  metadata?: JsonObject;
}

export interface HeartbeatRequest {
  workerId: string;
  inFlight?: number;
  processed?: number;
  failed?: number;
}

export interface WorkerEvent {
  kind: WorkerEventKind;
  /** RFC 3339 with an offset; default now. */
  at?: string;
  message?: string;
  stageId?: number;
  pipelineId?: number;
  data?: JsonObject;
}

export interface WorkerEventsRequest {
  workerId: string;
  events: WorkerEvent[];
}

export interface ShutdownRequest {
  workerId: string;
  reason?: string;
}

export interface PullJobRequest {
  queue: string;
  /** 0..20, default 0. */
  waitSeconds?: number;
  /** Extension (decision 0098): acquire the delivered stage's lease in the same call. */
  lease?: { workerId: string };
}

export interface AckJobRequest {
  token: string;
  /** Default false. */
  requeue?: boolean;
}

export interface StageLeaseRequest {
  executionId: string;
  workerId: string;
}

export interface StageResultLog {
  message: string;
  logLevel?: string;
  created?: string;
}

export interface StageResultSubmit {
  stageId: number;
  executionId: string;
  attempt: number;
  pipelineId?: number;
  /** Omission decodes as false. */
  isSuccess?: boolean;
  result?: string;
  isWaitingForApproval?: boolean;
  errorCode?: string;
  retryable?: boolean;
  /** Accepted but unused. */
  nextStageId?: number;
  /** Accepted but unused. */
  runNextIfCurrentFailed?: boolean;
  logs?: StageResultLog[];
  contextItems?: ContextItemInput[];
  appendedStages?: StageInfo[];
  /** Extension (decision 0098): after the 202, acknowledge this delivery (requeue=false). */
  ackToken?: string;
  /** Extension (decision 0100): after the 202 (and the ack), pull once more without waiting. */
  next?: PullNextRequest;
}

/** Decision 0100: the pull a result may carry; never waits (as waitSeconds 0). */
export interface PullNextRequest {
  queue: string;
  lease?: { workerId: string };
}

// ---------------------------------------------------------------------------------------------
// Response types

export interface MessageBrokerInfo {
  enabled: boolean;
  connectionString: string | null;
}

export interface BootstrapResponse {
  workerId: string;
  sessionToken: string;
  sessionExpiresAt: string;
  applicationId: number;
  queues: string[];
  heartbeatIntervalSeconds: number;
  messageBroker: MessageBrokerInfo;
}

export interface StageLeaseResponse {
  acquired: boolean;
  attempt: number | null;
  leaseExpiresAt: string | null;
  reason: LeaseRefusalReason | null;
}

/** The payload of a pulled job (addendum §5.1); also the queue payload of a dispatch. */
export interface StageNextMessage {
  applicationId: number;
  pipelineId: number;
  stageId: number;
  executionId: string;
  stageName: string;
  stageHandlerName: string;
  input: string;
  options: StageOptions;
  /** Real values, sensitive ones included, deleted keys excluded. */
  pipelineContextItems: ContextItem[];
  traceId: string;
  spanId: string;
  dispatchedAt: string;
  timeOutSeconds: number | null;
  previousAttempts: number;
}

export interface PullJobResponse {
  token: string;
  queue: string;
  payload: StageNextMessage;
  messageId: string;
  headers: JsonObject;
  /** Only when the pull asked for it; null when the acquisition got no answer (decision 0098). */
  lease?: StageLeaseResponse | null;
}

export interface StageResultAccepted {
  accepted: boolean;
  stageId: number;
  executionId: string;
  /** Only when the result carried an ackToken: whether this process held and acknowledged it. */
  acked?: boolean;
  /** Only when the result carried `next`: the delivery it pulled, or null when none was taken (decision 0100). */
  next?: PullJobResponse | null;
}

// ---------------------------------------------------------------------------------------------
// Request schemas

export const bootstrapRequestSchema = named(
  'BootstrapRequest',
  {
    instanceId: str({ minLength: 1, maxLength: limits.instanceIdChars }),
    workerName: str({ maxLength: limits.workerNameChars }),
    handlers: arrayOf(str({ minLength: 1, maxLength: limits.stageHandlerNameChars }), {
      maxItems: limits.workerHandlers,
    }),
    sdkVersion: str({ maxLength: limits.sdkVersionChars }),
    hostname: str({ maxLength: limits.hostnameChars }),
    metadata: freeObject(limits.workerMetadataBytes, 'free-form; at most 16384 bytes as JSON'),
  },
  { required: ['instanceId'] },
);

const counter = () => int(0);

export const heartbeatRequestSchema = named(
  'HeartbeatRequest',
  { workerId: str(), inFlight: counter(), processed: counter(), failed: counter() },
  { required: ['workerId'] },
);

export const workerEventSchema = named(
  'WorkerEvent',
  {
    kind: enumOf(WORKER_EVENT_KINDS),
    at: dateTime('default now'),
    message: str({ maxLength: limits.eventMessageChars }),
    stageId: id(),
    pipelineId: id(),
    data: freeObject(limits.eventDataBytes, 'free-form; at most 16384 bytes as JSON'),
  },
  { required: ['kind'] },
);

/** The events request schema for a batch limit (the registered one carries the default and an id). */
export function eventsSchema(maxBatch: number, withId: boolean): JsonSchema {
  const schema = named(
    'WorkerEventsRequest',
    {
      workerId: str(),
      events: arrayOf(ref('WorkerEvent'), { minItems: 1, maxItems: maxBatch }),
    },
    { required: ['workerId', 'events'] },
  );
  if (withId) return schema;
  const { $id: _id, ...anonymous } = schema;
  return anonymous;
}

/** The events body with the default batch size (WORKER_EVENTS_MAX_BATCH = 100). */
export const workerEventsRequestSchema = eventsSchema(limits.workerEventsMaxBatchDefault, true);

export const shutdownRequestSchema = named(
  'ShutdownRequest',
  { workerId: str(), reason: str({ maxLength: limits.shutdownReasonChars }) },
  { required: ['workerId'] },
);

export const pullJobRequestSchema = named(
  'PullJobRequest',
  {
    queue: str({ description: 'app_{applicationId}_{handler}_StageNext' }),
    waitSeconds: { ...int(0, limits.waitSecondsMax), default: 0 },
    lease: ref('PullLeaseRequest'),
  },
  { required: ['queue'] },
);

/** Decision 0098: the lease acquisition a pull may carry; the session comes from X-Worker-Session. */
export const pullLeaseRequestSchema = named(
  'PullLeaseRequest',
  { workerId: str({ minLength: 1 }) },
  {
    required: ['workerId'],
    description:
      'Extension: acquire the lease of the delivered stage as this worker (X-Worker-Session required), as POST /stages/{stageId}/lease/acquire would; the answer is the response lease.',
  },
);

/** Decision 0100: the pull a result may carry, taken after the result is accepted. */
export const pullNextRequestSchema = named(
  'PullNextRequest',
  {
    queue: str({ description: 'app_{applicationId}_{handler}_StageNext' }),
    lease: ref('PullLeaseRequest'),
  },
  {
    required: ['queue'],
    description:
      'Extension: once the result is accepted (and its ackToken acknowledged), pull this queue once without waiting, as POST /jobs/pull with waitSeconds 0 would; the answer is the response next.',
  },
);

export const ackJobRequestSchema = named(
  'AckJobRequest',
  { token: str({ minLength: 1 }), requeue: { ...bool(), default: false } },
  { required: ['token'] },
);

export const stageLeaseRequestSchema = named(
  'StageLeaseRequest',
  { executionId: str({ minLength: 1 }), workerId: str({ minLength: 1 }) },
  { required: ['executionId', 'workerId'] },
);

export const stageResultLogSchema = named(
  'StageResultLog',
  {
    message: str(),
    logLevel: { ...str({ minLength: 1, maxLength: limits.logLevelChars }), default: 'Information' },
    created: dateTime('default now'),
  },
  { required: ['message'] },
);

/**
 * A context item of a result: ContextItemInput without the 64 KiB value limit, which api-spec
 * states for creation only. A result's values are bounded by its request body (327680 bytes).
 */
export const resultContextItemSchema = named(
  'ResultContextItem',
  {
    ...(contextItemInputSchema.properties as Record<string, JsonSchema>),
    value: {
      ...str({
        maxBytes: limits.resultRequestBytes,
        description: 'not limited to 65536 bytes as at creation: the result body bounds it',
      }),
      default: '',
    },
  },
  { required: ['key'] },
);

export const stageResultSubmitSchema = named(
  'StageResultSubmit',
  {
    stageId: id('must equal the route stageId'),
    executionId: str({ minLength: 1 }),
    attempt: int(1, undefined, 'the attempt accepted by the lease'),
    pipelineId: nullable(id('when given, must equal the stage pipeline')),
    isSuccess: { ...bool('omission decodes as false; always send it'), default: false },
    result: str({ maxBytes: limits.resultBytes }),
    isWaitingForApproval: bool(),
    errorCode: str({ maxLength: limits.errorCodeChars, noControlCharacters: true }),
    retryable: nullable(bool('false disables automatic retries')),
    nextStageId: nullable({ type: 'integer', description: 'accepted but unused' }),
    runNextIfCurrentFailed: bool('accepted but unused'),
    logs: arrayOf(ref('StageResultLog'), { maxItems: limits.resultLogs }),
    contextItems: arrayOf(ref('ResultContextItem'), { maxItems: limits.resultContextItems }),
    appendedStages: arrayOf(ref('StageInfo'), { maxItems: limits.stagesPerPipeline }),
    ackToken: str({
      minLength: 1,
      maxLength: limits.deliveryTokenChars,
      description: 'extension: the pull token to acknowledge (requeue=false) once the result is accepted',
    }),
    next: ref('PullNextRequest'),
  },
  { required: ['stageId', 'executionId', 'attempt'] },
);

// ---------------------------------------------------------------------------------------------
// Response schemas

export const messageBrokerInfoSchema = response('MessageBrokerInfo', {
  enabled: bool(),
  connectionString: nullable(str()),
});

export const bootstrapResponseSchema = response('BootstrapResponse', {
  workerId: str({ minLength: 1 }),
  sessionToken: str({ minLength: 1 }),
  sessionExpiresAt: utcDateTime(),
  applicationId: int(1, MAX_ID),
  queues: arrayOf(str()),
  heartbeatIntervalSeconds: int(1, MAX_ID),
  messageBroker: ref('MessageBrokerInfo'),
});

export const stageLeaseResponseSchema = response('StageLeaseResponse', {
  acquired: bool(),
  attempt: nullable(int(1, MAX_ID)),
  leaseExpiresAt: nullable(utcDateTime()),
  reason: nullable(enumOf(LEASE_REFUSAL_REASONS)),
});

export const stageNextMessageSchema = response('StageNextMessage', {
  applicationId: int(1, MAX_ID),
  pipelineId: int(1, MAX_ID),
  stageId: int(1, MAX_ID),
  executionId: str({ minLength: 1 }),
  stageName: str(),
  stageHandlerName: str(),
  input: str(),
  options: ref('StageOptions'),
  pipelineContextItems: arrayOf(ref('ContextItem')),
  traceId: str(),
  spanId: str(),
  dispatchedAt: utcDateTime(),
  timeOutSeconds: nullable(int(1, MAX_ID)),
  previousAttempts: int(0, MAX_ID),
});

export const pullJobResponseSchema = named(
  'PullJobResponse',
  {
    token: str({ minLength: 1 }),
    queue: str(),
    payload: ref('StageNextMessage'),
    messageId: str(),
    headers: freeObject(),
    lease: {
      oneOf: [ref('StageLeaseResponse'), { type: 'null' }],
      description: 'extension: present when the pull carried lease; null when the acquisition got no answer (call lease/acquire)',
    },
  },
  { required: ['token', 'queue', 'payload', 'messageId', 'headers'], closed: true },
);

export const stageResultAcceptedSchema = named(
  'StageResultAccepted',
  {
    accepted: bool(),
    stageId: int(1, MAX_ID),
    executionId: str(),
    acked: bool('extension: present when the result carried ackToken; whether that delivery was acknowledged'),
    next: {
      oneOf: [ref('PullJobResponse'), { type: 'null' }],
      description:
        'extension: present when the result carried next; the delivery pulled, or null when none was taken (empty queue, a pull limit, the broker): pull as usual',
    },
  },
  { required: ['accepted', 'stageId', 'executionId'], closed: true },
);

registerSchemas(
  bootstrapRequestSchema,
  heartbeatRequestSchema,
  workerEventSchema,
  workerEventsRequestSchema,
  shutdownRequestSchema,
  pullLeaseRequestSchema,
  pullJobRequestSchema,
  pullNextRequestSchema,
  ackJobRequestSchema,
  stageLeaseRequestSchema,
  stageResultLogSchema,
  resultContextItemSchema,
  stageResultSubmitSchema,
  messageBrokerInfoSchema,
  bootstrapResponseSchema,
  stageLeaseResponseSchema,
  stageNextMessageSchema,
  pullJobResponseSchema,
  stageResultAcceptedSchema,
);
