// Problem details (RFC 9457) and the code table of addendum §3.
import { arrayOf, int, ref, response, str } from './fragments.js';
import { registerSchemas } from './validate.js';
import type { FieldError } from './validate.js';

export const problemCodes = {
  validation_failed: { status: 400, title: 'Validation failed' },
  not_plannable: { status: 400, title: 'Schedule cannot be planned' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_conflict: { status: 409, title: 'Idempotency key conflict' },
  pipeline_terminal: { status: 409, title: 'Pipeline is terminal' },
  pipeline_not_terminal: { status: 409, title: 'Pipeline is not terminal' },
  pipeline_not_failed: { status: 409, title: 'Pipeline has no failure' },
  stage_not_waiting: { status: 409, title: 'Stage is not waiting for approval' },
  decision_conflict: { status: 409, title: 'Decision conflict' },
  schedule_archived: { status: 409, title: 'Schedule is archived' },
  no_future_run: { status: 409, title: 'No future run' },
  // 408 and 431 are answered by the HTTP server itself, before a request reaches a route.
  request_timeout: { status: 408, title: 'Request timeout' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  request_header_too_large: { status: 431, title: 'Request header fields too large' },
  too_many_inflight: { status: 429, title: 'Too many in-flight deliveries' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal: { status: 500, title: 'Internal error' },
  broker_unavailable: { status: 503, title: 'Broker unavailable' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  cancellation_timeout: { status: 504, title: 'Cancellation timed out' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof problemCodes;

export const PROBLEM_CODES = Object.keys(problemCodes) as ProblemCode[];

export interface ProblemDetails {
  /** `urn:problem-type:pipeline-orchestration:{code}` */
  type: string;
  title: string;
  status: number;
  detail: string;
  /** Request path without the query string. */
  instance: string;
  code: ProblemCode;
  traceId: string;
  /** Only with `validation_failed`, at least one item. */
  errors?: FieldError[];
}

/** The `type` URI of a problem code. */
export function problemType(code: ProblemCode): string {
  return `urn:problem-type:pipeline-orchestration:${code}`;
}

export function isProblemCode(value: unknown): value is ProblemCode {
  return typeof value === 'string' && Object.hasOwn(problemCodes, value);
}

/** Builds a problem body; `errors` is kept only for `validation_failed`. */
export function problemDetails(input: {
  code: ProblemCode;
  detail: string;
  instance: string;
  traceId: string;
  errors?: readonly FieldError[];
}): ProblemDetails {
  const { status, title } = problemCodes[input.code];
  const problem: ProblemDetails = {
    type: problemType(input.code),
    title,
    status,
    detail: input.detail,
    instance: input.instance,
    code: input.code,
    traceId: input.traceId,
  };
  if (input.code === 'validation_failed') {
    problem.errors = [...(input.errors ?? [])];
  }
  return problem;
}

export const fieldErrorSchema = response('FieldError', {
  field: str({ description: 'JSON Pointer into the body ("" = whole body), or a parameter name' }),
  message: str(),
});

const problemProperties = {
  type: { type: 'string', pattern: '^urn:problem-type:pipeline-orchestration:[a-z_]+$' },
  title: str(),
  status: int(400, 599),
  detail: str(),
  instance: str(),
  code: { type: 'string', enum: PROBLEM_CODES },
  traceId: str({ minLength: 1 }),
  errors: arrayOf(ref('FieldError'), { minItems: 1 }),
};

/** `errors` is present only with `validation_failed`. */
export const problemDetailsSchema = {
  ...response('ProblemDetails', problemProperties),
  required: Object.keys(problemProperties).filter((key) => key !== 'errors'),
};

registerSchemas(fieldErrorSchema, problemDetailsSchema);
