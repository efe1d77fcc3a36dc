// The errors a call can throw: ProblemError for every 4xx/5xx answer (addendum §3 problem
// details), ConnectionError when no answer came at all.
import type { components } from './generated/openapi.js';

export type ProblemDetails = components['schemas']['ProblemDetails'];
export type FieldError = components['schemas']['FieldError'];

/** The code given to an error answer that is not problem+json (a proxy's 502 page, say). */
export const UNEXPECTED_RESPONSE = 'unexpected_response';

/** An error answer from the API: `code` is stable, `errors` lists each invalid field. */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  /** HTTP status. */
  readonly status: number;
  /** Machine-readable code (`validation_failed`, `pipeline_terminal`, …), or `unexpected_response`. */
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  /** Per-field messages (`validation_failed` only): `field` is a JSON Pointer or a parameter name. */
  readonly errors: FieldError[];
  /** The request's correlation id, to quote to whoever runs the service. */
  readonly traceId: string | undefined;
  readonly instance: string | undefined;
  readonly type: string | undefined;
  /** The answer's Retry-After, in seconds, when it had one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(fields: {
    status: number;
    code: string;
    title: string;
    detail: string;
    errors?: FieldError[];
    traceId?: string | undefined;
    instance?: string | undefined;
    type?: string | undefined;
    retryAfterSeconds?: number | undefined;
  }) {
    super(`${fields.title} (${fields.code}, HTTP ${fields.status}): ${fields.detail}`);
    this.status = fields.status;
    this.code = fields.code;
    this.title = fields.title;
    this.detail = fields.detail;
    this.errors = fields.errors ?? [];
    this.traceId = fields.traceId;
    this.instance = fields.instance;
    this.type = fields.type;
    this.retryAfterSeconds = fields.retryAfterSeconds;
  }

  /** The problem as the API sent it (or as close as an unexpected answer allows). */
  toJSON(): Record<string, unknown> {
    return {
      type: this.type,
      title: this.title,
      status: this.status,
      detail: this.detail,
      instance: this.instance,
      code: this.code,
      traceId: this.traceId,
      ...(this.errors.length > 0 ? { errors: this.errors } : {}),
    };
  }
}

/** No HTTP answer: the connection was refused or broke, DNS failed, or the request was aborted. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  constructor(
    /** The URL asked, without its query string. */
    readonly url: string,
    options: { cause: unknown },
  ) {
    super(`no answer from ${url}: ${describeCause(options.cause)}`, options);
  }
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  // undici reports "fetch failed" and puts the reason (ECONNREFUSED …) in its cause.
  const inner = cause.cause;
  if (inner instanceof Error && inner.message) return inner.message;
  return cause.message;
}

function isFieldError(value: unknown): value is FieldError {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as FieldError).field === 'string' &&
    typeof (value as FieldError).message === 'string'
  );
}

function stringField(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The ProblemError for an error answer. `body` is what openapi-fetch read: the parsed JSON, or
 * the text when it was not JSON. Pure: the answer has been read already.
 */
export function toProblemError(
  status: number,
  statusText: string,
  body: unknown,
  retryAfter: string | null = null,
): ProblemError {
  const retryAfterSeconds =
    retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter.trim()) : undefined;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const problem = body as Record<string, unknown>;
    const code = stringField(problem, 'code');
    if (code !== undefined) {
      return new ProblemError({
        status,
        code,
        title: stringField(problem, 'title') ?? (statusText || `HTTP ${status}`),
        detail: stringField(problem, 'detail') ?? '',
        errors: Array.isArray(problem.errors) ? problem.errors.filter(isFieldError) : [],
        traceId: stringField(problem, 'traceId'),
        instance: stringField(problem, 'instance'),
        type: stringField(problem, 'type'),
        retryAfterSeconds,
      });
    }
  }
  const text = typeof body === 'string' ? body : body === undefined ? '' : JSON.stringify(body);
  const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  return new ProblemError({
    status,
    code: UNEXPECTED_RESPONSE,
    title: statusText || `HTTP ${status}`,
    detail: snippet === '' ? `HTTP ${status} without a problem body` : snippet,
    retryAfterSeconds,
  });
}
