// Public types of the handler API.
import type { AppendedStage, ContextItem, JsonObject, StageOptions } from './protocol.js';

/** Stage log levels the dashboard knows; any 1..32 character string is accepted. */
export type StageLogLevel =
  'Trace' | 'Debug' | 'Information' | 'Warning' | 'Error' | 'Critical' | (string & {});

/** What a handler knows about the stage execution it runs. */
export interface StageDetails {
  readonly applicationId: number;
  readonly pipelineId: number;
  readonly stageId: number;
  readonly stageName: string;
  /** The handler name (stageHandlerName). */
  readonly handler: string;
  /** Opaque id of this dispatch; redeliveries of one dispatch repeat it. */
  readonly executionId: string;
  /** 1-based attempt accepted by the lease. */
  readonly attempt: number;
  /** Leases granted for this stage before this dispatch. */
  readonly previousAttempts: number;
  readonly traceId: string;
  readonly spanId: string;
  readonly options: Readonly<StageOptions>;
  /** The stage's timeout; ctx.signal aborts when it has passed since the lease grant. */
  readonly timeOutSeconds: number | null;
  readonly dispatchedAt: string;
  readonly queue: string;
  readonly messageId: string;
}

export interface SetContextOptions {
  /** Redacted from status responses and persisted logs. Default false. */
  sensitive?: boolean;
  valueType?: string;
}

declare const approvalBrand: unique symbol;

/** Returned by `awaitApproval()`: parks the stage in WaitingForApproval. */
export interface ApprovalRequest {
  readonly [approvalBrand]: true;
  readonly result: unknown;
}

export interface HandlerContext {
  /** The stage input string (`""` when none). */
  readonly input: string;
  /**
   * The input parsed as JSON. Invalid JSON fails the stage with VALIDATION_ERROR (not retried).
   * An empty input returns `fallback` when one is given, otherwise it is invalid too.
   */
  json<T = unknown>(fallback?: T): T;
  readonly stage: StageDetails;
  /** Pipeline context at dispatch time (key → value), updated by setContext/deleteContext. */
  readonly context: Readonly<Record<string, string>>;
  /** The context items as delivered, with valueType and isSensitive. */
  readonly contextItems: readonly ContextItem[];
  /** Aborts when the lease is lost, the stage times out, or the worker stops past its drain timeout. */
  readonly signal: AbortSignal;
  /** Headers of the delivery (`traceparent`: the W3C trace context of this stage's pipeline). */
  readonly headers: Readonly<JsonObject>;
  /**
   * The W3C traceparent to continue the pipeline's trace from: the SDK's `stage.handler` span when
   * @opentelemetry/api is installed with a registered provider (that span is then also active
   * while the handler runs), else the delivery's `headers.traceparent`. Undefined when neither.
   */
  readonly traceparent: string | undefined;
  /** Adds a line to the stage logs sent with the result (at most 100 lines are kept). */
  log(message: string, level?: StageLogLevel): void;
  /** Sets a pipeline context key; a non-string value is JSON-serialised. */
  setContext(key: string, value: unknown, options?: SetContextOptions): void;
  deleteContext(key: string): void;
  /** Appends stages at the end of the pipeline when the result is applied. */
  appendStages(stages: AppendedStage | readonly AppendedStage[]): void;
  /** `return ctx.awaitApproval(output)` parks the stage until it is resumed. */
  awaitApproval(result?: unknown): ApprovalRequest;
}

/**
 * A stage handler. Return a string (sent as is), any other JSON value (serialised), or nothing.
 * Throw a StageError to fail with a code.
 */
export type StageHandler = (ctx: HandlerContext) => unknown;

export type WorkerState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

export interface WorkerStats {
  readonly state: WorkerState;
  readonly workerId: string | undefined;
  readonly queues: readonly string[];
  /** Deliveries between lease grant and acknowledgement. */
  readonly inFlight: number;
  /** Executions whose success (or approval request) the server accepted. */
  readonly processed: number;
  /** Executions that failed, lost their lease, or whose result could not be delivered. */
  readonly failed: number;
}

export interface StopOptions {
  /** How long running handlers may take before ctx.signal aborts; default drainTimeoutMs. */
  timeoutMs?: number;
  /** Sent with POST /workers/shutdown. */
  reason?: string;
}

export interface Worker {
  /** Bootstraps and starts pulling; resolves once the worker is running. */
  start(): Promise<void>;
  /** Stops pulling, lets running handlers finish (bounded), then announces the shutdown. */
  stop(options?: StopOptions): Promise<void>;
  /** Stops on SIGTERM/SIGINT (a second signal exits at once). Returns a function that unregisters. */
  stopOnSignals(signals?: readonly NodeJS.Signals[]): () => void;
  readonly state: WorkerState;
  readonly stats: WorkerStats;
}
