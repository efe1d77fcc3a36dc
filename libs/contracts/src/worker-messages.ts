// The worker protocol's messages as TypeScript types, and its enumerations: bootstrap, heartbeat,
// events, shutdown, pull, ack, lease, result, and the StageNextMessage payload (api-spec.md "Worker
// protocol resources", addendum §5.1-§5.4, §12, §13). Their JSON schemas are in workers.ts.
import type { JsonObject } from './json.js';
import type { ContextItemInput, StageInfo } from './pipelines.js';
import type { ContextItem, StageOptions } from './pipeline-responses.js';

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

/**
 * A StageNext queue job: the pulled payload, except that a pipeline context too large to copy into
 * every message is left out (`pipelineContextItems` empty) and named by `contextSnapshotId`; the
 * worker-gateway puts the items back at delivery, so a worker always gets §5.1 (decision 0121).
 */
export interface StageNextJob extends StageNextMessage {
  contextSnapshotId?: string;
}

export interface PullJobResponse {
  token: string;
  queue: string;
  payload: StageNextMessage;
  messageId: string;
  headers: JsonObject;
  /** Only when the pull asked for it; null when the acquisition got no answer (decision 0098). */
  lease?: StageLeaseResponse | null;
  /**
   * True when the message waited in its queue for a place of its handler's maxConcurrent rather
   * than the pull for a message: the queue has a backlog, so the worker's result may carry its next
   * pull (decision 0100) however long this pull waited. Absent otherwise (decision 0132).
   */
  backlog?: boolean;
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
