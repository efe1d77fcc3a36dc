// Error classes: what handlers throw (StageError), what the HTTP client throws (ApiError,
// TransportError, ProtocolError), the reasons ctx.signal aborts with, and configuration errors.

export interface StageErrorOptions {
  /** false: the server never retries this failure. true: allowed (still subject to the stage's policy). */
  retryable?: boolean;
  cause?: unknown;
}

/**
 * Throw from a handler to fail the stage with a machine-readable `errorCode`.
 * BUSINESS_REJECTED, VALIDATION_ERROR, INVALID_STATE and MISSING_REQUIRED_DATA are never retried.
 */
export class StageError extends Error {
  override readonly name = 'StageError';
  readonly code: string;
  readonly retryable: boolean | undefined;

  constructor(code: string, message: string, options: StageErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (typeof code !== 'string' || code.trim() === '') {
      throw new TypeError('StageError: code must be a non-empty string');
    }
    this.code = code;
    this.retryable = options.retryable;
  }
}

/** A non-2xx answer from the server. `code` is the problem-details code when the body has one. */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly detail: string | undefined,
    /** From Retry-After, when the answer carried one. */
    readonly retryAfterMs: number | undefined,
  ) {
    super(
      `${method} ${path} answered ${status}${code ? ` ${code}` : ''}${detail ? `: ${detail}` : ''}`,
    );
  }
}

/** The request may or may not have reached the server: network failure or timeout. */
export class TransportError extends Error {
  override readonly name = 'TransportError';

  constructor(
    readonly method: string,
    readonly path: string,
    readonly timedOut: boolean,
    cause: unknown,
  ) {
    super(`${method} ${path} failed: ${timedOut ? 'timed out' : networkReason(cause)}`, { cause });
  }
}

/** undici reports "fetch failed" and keeps the useful part (ECONNREFUSED, …) in `cause`. */
function networkReason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const inner = err.cause as { code?: unknown; message?: unknown } | undefined;
  if (inner !== undefined && inner !== null) {
    if (typeof inner.code === 'string') return `${err.message} (${inner.code})`;
    if (typeof inner.message === 'string') return `${err.message} (${inner.message})`;
  }
  return err.message;
}

/** The server answered 2xx with a body the SDK cannot use. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

/** Invalid `createWorker` options; `problems` lists every one found. */
export class WorkerConfigError extends Error {
  override readonly name = 'WorkerConfigError';

  constructor(readonly problems: string[]) {
    super(`Invalid worker options:\n  - ${problems.join('\n  - ')}`);
  }
}

/**
 * ctx.signal reason: the lease is no longer this worker's, so another attempt may run the stage.
 * `reason` is the gateway's refusal (`pipeline_cancelled`, `stage_terminal`, `stale_execution`,
 * `lease_expired`, `not_owner`), `not_found` (404), a 409's problem code, or `lapsed`: the SDK's
 * own clock saw the lease run out while no renewal got through.
 */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  readonly code = 'LEASE_LOST';

  constructor(readonly reason: string) {
    super(`lease lost: ${reason}`);
  }
}

/** ctx.signal reason: the stage's `timeOutSeconds` passed since the lease grant. */
export class StageTimeoutError extends Error {
  override readonly name = 'StageTimeoutError';

  constructor(readonly timeOutSeconds: number) {
    super(`stage timed out after ${timeOutSeconds} s`);
  }
}

/** ctx.signal reason: the worker is stopping and its drain timeout passed. */
export class WorkerStoppingError extends Error {
  override readonly name = 'WorkerStoppingError';

  constructor() {
    super('worker is stopping');
  }
}

/**
 * True when the outcome of a call is unknown or temporary, so the same request may be sent again:
 * network errors, timeouts, 408, 429 and 5xx.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof TransportError) return true;
  if (err instanceof ApiError) return err.status >= 500 || err.status === 408 || err.status === 429;
  return false;
}

export function isStatus(err: unknown, status: number): err is ApiError {
  return err instanceof ApiError && err.status === status;
}

export function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
