// @po/worker-sdk: build pipeline-orchestration workers in TypeScript.
export { createWorker } from './worker.js';
export type { WorkerOptions } from './options.js';
export { awaitApproval } from './approval.js';
export {
  ApiError,
  isRetryable,
  LeaseLostError,
  ProtocolError,
  StageError,
  StageTimeoutError,
  TransportError,
  WorkerConfigError,
  WorkerStoppingError,
} from './errors.js';
export type { StageErrorOptions } from './errors.js';
export { createJsonLogger, silentLogger } from './logger.js';
export type { JsonLoggerOptions, LogFields, Logger, LogLevelName } from './logger.js';
export { WorkerClient, MalformedDeliveryError } from './client.js';
export type { WorkerClientOptions } from './client.js';
export { httpFetch, type FetchLike, type TransportRequest, type TransportResponse } from './transport.js';
export { LIMITS, queueName } from './protocol.js';
export type {
  AppendedStage,
  Backoff,
  BootstrapRequest,
  BootstrapResponse,
  ContextItem,
  ContextItemUpdate,
  HeartbeatRequest,
  JsonObject,
  LeaseRefusalReason,
  PullJobResponse,
  StageLeaseRequest,
  StageLeaseResponse,
  StageNextMessage,
  StageOptions,
  StageOptionsInput,
  StageResultAccepted,
  StageResultLog,
  StageResultSubmit,
  WorkerEvent,
  WorkerEventKind,
} from './protocol.js';
export type {
  ApprovalRequest,
  HandlerContext,
  SetContextOptions,
  StageDetails,
  StageHandler,
  StageLogLevel,
  StopOptions,
  Worker,
  WorkerState,
  WorkerStats,
} from './types.js';
export { SDK_VERSION } from './version.js';
