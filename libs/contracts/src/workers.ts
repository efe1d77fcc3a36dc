// The worker protocol's JSON schemas: bootstrap, heartbeat, events, shutdown, pull, ack, lease,
// result, and the StageNextMessage payload (api-spec.md "Worker protocol resources", addendum
// §5.1-§5.4, §12, §13). Their TypeScript types are in worker-messages.ts.
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
import { limits } from './limits.js';
import { contextItemInputSchema } from './pipelines.js';
// Registers StageOptions and ContextItem, which StageNextMessage refers to.
import './pipeline-responses.js';
import { registerSchemas } from './validate.js';
import { LEASE_REFUSAL_REASONS, WORKER_EVENT_KINDS } from './worker-messages.js';

export * from './worker-messages.js';

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
    backlog: bool(
      "extension: true when the message waited for a place of its handler's maxConcurrent rather than the pull for a message: the queue has a backlog, so the result may carry the next pull however long this pull waited; absent otherwise",
    ),
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
