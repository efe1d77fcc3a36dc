// Error answers (addendum §3): application/problem+json with a stable `code` and, for
// validation_failed, per-field `errors`. Anything else (a proxy's HTML page) still becomes an
// ApiError, so every page can show one kind of alert.

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
    readonly traceId: string | null = null,
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
}

/** No answer at all (network down, server stopped). */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Builds the ApiError of an error answer from its status and (maybe unparsable) body text. */
export function toApiError(status: number, bodyText: string, statusText = ''): ApiError {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    // not JSON: described by the status alone
  }
  if (!isRecord(parsed)) {
    const title = statusText || `HTTP ${status}`;
    return new ApiError(status, 'unexpected_response', title, `The server answered ${status}.`);
  }
  const errors: FieldError[] = Array.isArray(parsed.errors)
    ? parsed.errors.filter(isRecord).map((e) => ({
        field: text(e.field) ?? '',
        message: text(e.message) ?? '',
      }))
    : [];
  return new ApiError(
    status,
    text(parsed.code) ?? 'unexpected_response',
    text(parsed.title) ?? (statusText || `HTTP ${status}`),
    text(parsed.detail) ?? '',
    errors,
    text(parsed.traceId),
  );
}

/**
 * An endpoint the server does not have yet (an older api-gateway): the router's own 404 says
 * "No such route.", unlike a 404 for an unknown resource on a route that exists.
 */
export function isEndpointMissing(error: unknown): boolean {
  return error instanceof ApiError && error.status === 404 && /no such route/i.test(error.detail);
}
