import type { ErrorCode, FieldError } from '@po/domain';

const PROBLEMS: Record<ErrorCode, { status: number; title: string }> = {
  validation_failed: { status: 400, title: 'Validation failed' },
  not_plannable: { status: 400, title: 'Schedule cannot be planned' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  conflict: { status: 409, title: 'Conflict' },
  idempotency_conflict: { status: 409, title: 'Idempotency key conflict' },
  pipeline_terminal: { status: 409, title: 'Pipeline is terminal' },
  stage_not_waiting: { status: 409, title: 'Stage is not waiting for approval' },
  decision_conflict: { status: 409, title: 'Conflicting decision' },
  schedule_archived: { status: 409, title: 'Schedule is archived' },
  no_future_run: { status: 409, title: 'No future run' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  too_many_inflight: { status: 429, title: 'Too many in-flight deliveries' },
  internal: { status: 500, title: 'Internal error' },
  broker_unavailable: { status: 503, title: 'Broker unavailable' },
  cancellation_timeout: { status: 504, title: 'Cancellation timed out' },
};

export function problemStatus(code: ErrorCode): number {
  return PROBLEMS[code].status;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ErrorCode;
  traceId: string;
  errors?: FieldError[];
}

/** RFC 9457 problem details (addendum §3). `errors` only for validation_failed. */
export function toProblem(
  code: ErrorCode,
  detail: string,
  ctx: { path: string; traceId: string },
  errors?: FieldError[],
): ProblemBody {
  const { status, title } = PROBLEMS[code];
  const body: ProblemBody = {
    type: `urn:problem-type:pipeline-orchestration:${code}`,
    title,
    status,
    detail,
    instance: ctx.path,
    code,
    traceId: ctx.traceId,
  };
  if (code === 'validation_failed') {
    body.errors = errors && errors.length > 0 ? errors : [{ field: '', message: detail }];
  }
  return body;
}
