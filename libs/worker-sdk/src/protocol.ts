// Wire types of the worker protocol (api-spec.md "Worker protocol", addendum §5.1-§5.4, §12, §13).
// Declared here, not imported from the server packages, so the SDK installs on its own.

export type JsonObject = { [key: string]: unknown };

export type Backoff = 'fixed' | 'linear' | 'exponential';

/** StageOptions as a dispatched stage carries them: all 13 fields, defaults applied. */
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
}

/** StageOptions of a stage the worker appends; every field optional. */
export type StageOptionsInput = {
  [K in keyof StageOptions]?: Exclude<StageOptions[K], null>;
};

/** A pipeline context item as delivered (real values, sensitive ones included). */
export interface ContextItem {
  key: string;
  value: string;
  valueType: string | null;
  isSensitive: boolean;
  isDeleted: boolean;
}

/** A context change in a result: upsert by key, or `isDeleted: true` to remove the key. */
export interface ContextItemUpdate {
  key: string;
  value?: string;
  valueType?: string;
  isSensitive?: boolean;
  isDeleted?: boolean;
}

/** A stage a worker appends to its pipeline (WorkerAppendedStage = StageInfo, addendum §5.2). */
export interface AppendedStage {
  stageName: string;
  stageHandlerName: string;
  description?: string;
  /** A string is used as the input as is; any other JSON value is serialised. */
  input?: string | number | boolean | JsonObject | unknown[];
  policies?: JsonObject[];
  options?: StageOptionsInput;
  isEvent?: boolean;
  runNextIfFailed?: boolean;
  runNextIfCurrentFailed?: boolean;
}

/** The payload of a pulled job (addendum §5.1). */
export interface StageNextMessage {
  applicationId: number;
  pipelineId: number;
  stageId: number;
  executionId: string;
  stageName: string;
  stageHandlerName: string;
  input: string;
  options: StageOptions;
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
  /** The lease the pull acquired (decision 0098); null when unanswered, absent from older servers. */
  lease?: StageLeaseResponse | null;
  /** The message waited for a place of its handler's maxConcurrent: the queue has a backlog (decision 0132). */
  backlog?: boolean;
}

export interface BootstrapRequest {
  instanceId: string;
  workerName?: string;
  handlers?: string[];
  sdkVersion?: string;
  hostname?: string;
  metadata?: JsonObject;
}

export interface BootstrapResponse {
  workerId: string;
  sessionToken: string;
  sessionExpiresAt: string;
  applicationId: number;
  queues: string[];
  heartbeatIntervalSeconds: number;
  messageBroker: { enabled: boolean; connectionString: string | null };
}

export interface HeartbeatRequest {
  workerId: string;
  inFlight?: number;
  processed?: number;
  failed?: number;
}

export type WorkerEventKind =
  | 'started'
  | 'stopping'
  | 'stopped'
  | 'stage_started'
  | 'stage_completed'
  | 'stage_failed'
  | 'lease_lost'
  | 'error'
  | 'custom';

export interface WorkerEvent {
  kind: WorkerEventKind;
  at?: string;
  message?: string;
  stageId?: number;
  pipelineId?: number;
  data?: JsonObject;
}

export type LeaseRefusalReason =
  | 'pipeline_cancelled'
  | 'stage_terminal'
  | 'stale_execution'
  | 'lease_held'
  | 'lease_expired'
  | 'not_owner';

export interface StageLeaseRequest {
  executionId: string;
  workerId: string;
}

export interface StageLeaseResponse {
  acquired: boolean;
  attempt: number | null;
  leaseExpiresAt: string | null;
  /** A known LeaseRefusalReason, or a newer server's value. */
  reason: LeaseRefusalReason | (string & {}) | null;
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
  isSuccess: boolean;
  result?: string;
  isWaitingForApproval?: boolean;
  errorCode?: string;
  retryable?: boolean;
  logs?: StageResultLog[];
  contextItems?: ContextItemUpdate[];
  appendedStages?: AppendedStage[];
  /** The pull token to acknowledge once the result is accepted (decision 0098). */
  ackToken?: string;
  /** Extension (decision 0100): once accepted, pull this queue once without waiting. */
  next?: { queue: string; lease?: { workerId: string } };
}

export interface StageResultAccepted {
  accepted: boolean;
  stageId: number;
  executionId: string;
  /** Whether the server acknowledged ackToken; undefined when it does not know the field. */
  acked?: boolean;
  /** The delivery pulled for `next`; null when none was; undefined when the server does not know the field. */
  next?: PullJobResponse | null;
}

/** Protocol limits the SDK enforces before sending (api-spec.md "Limits", addendum §13). */
export const LIMITS = {
  resultBytes: 262_144,
  resultRequestBytes: 327_680,
  resultLogs: 100,
  resultContextItems: 64,
  appendedStages: 100,
  errorCodeChars: 200,
  logLevelChars: 32,
  eventsPerBatch: 100,
  eventMessageChars: 4000,
  shutdownReasonChars: 1000,
  instanceIdChars: 200,
  workerNameChars: 200,
  handlers: 100,
  handlerNameChars: 300,
  contextKeyChars: 300,
  waitSecondsMax: 20,
} as const;

/** The queue a handler's jobs arrive on. */
export function queueName(applicationId: number, handler: string): string {
  return `app_${applicationId}_${handler}_StageNext`;
}
