import type { FieldError } from '@po/contracts';

/**
 * Domain errors carry a stable machine code (addendum §3) and never an HTTP status: the HTTP layer
 * maps codes to statuses in one place. Their per-field errors are the problem details' `errors`
 * items, a wire type.
 */
export type { FieldError } from '@po/contracts';

export type ErrorCode =
  | 'validation_failed'
  | 'not_plannable'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'idempotency_conflict'
  | 'pipeline_terminal'
  | 'pipeline_not_terminal'
  | 'pipeline_not_failed'
  | 'stage_not_waiting'
  | 'decision_conflict'
  | 'schedule_archived'
  | 'no_future_run'
  | 'payload_too_large'
  | 'too_many_inflight'
  | 'rate_limited'
  | 'internal'
  | 'broker_unavailable'
  | 'cancellation_timeout';

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationFailed extends DomainError {
  constructor(readonly errors: FieldError[]) {
    super('validation_failed', errors.map((e) => `${e.field || '(body)'}: ${e.message}`).join('; '));
  }
  static at(field: string, message: string): ValidationFailed {
    return new ValidationFailed([{ field, message }]);
  }
}

export class Unauthorized extends DomainError {
  constructor(message = 'Missing or invalid credentials.') {
    super('unauthorized', message);
  }
}

export class Forbidden extends DomainError {
  constructor(message: string) {
    super('forbidden', message);
  }
}

export class NotFound extends DomainError {
  constructor(message: string) {
    super('not_found', message);
  }
}

export class PipelineTerminal extends DomainError {
  constructor(pipelineId: number, status: string) {
    super('pipeline_terminal', `Pipeline ${pipelineId} is ${status}; it can no longer change.`);
  }
}

/** A rerun of a pipeline that has not ended: only a terminal pipeline can be rerun (decision 0089). */
export class PipelineNotTerminal extends DomainError {
  constructor(pipelineId: number, status: string) {
    super('pipeline_not_terminal', `Pipeline ${pipelineId} is ${status}; only a Completed, Failed or Cancelled pipeline can be rerun.`);
  }
}

/** A rerun from the failure of a pipeline that has none: it Completed (decision 0133). */
export class PipelineNotFailed extends DomainError {
  constructor(pipelineId: number) {
    super('pipeline_not_failed', `Pipeline ${pipelineId} is Completed: it has no failure to rerun from; rerun it from the start.`);
  }
}

export class IdempotencyConflict extends DomainError {
  constructor() {
    super('idempotency_conflict', 'This idempotency key was already used with a different creation intent.');
  }
}

export class StageNotWaiting extends DomainError {
  constructor(stageId: number, status: string) {
    super('stage_not_waiting', `Stage ${stageId} is ${status}, not WaitingForApproval.`);
  }
}

export class DecisionConflict extends DomainError {
  constructor(stageId: number, approved: boolean) {
    super('decision_conflict', `Stage ${stageId} was already ${approved ? 'approved' : 'rejected'}.`);
  }
}

export class PayloadTooLarge extends DomainError {
  constructor(limitBytes: number) {
    super('payload_too_large', `The request body exceeds ${limitBytes} bytes.`);
  }
}

/** Too many requests from one client; `retryAfterSeconds` (≥ 1) says when one more will pass. */
export class RateLimited extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super('rate_limited', message, true);
  }
}

export class BrokerUnavailable extends DomainError {
  constructor(message = 'The message broker is unavailable; retry the request.') {
    super('broker_unavailable', message, true);
  }
}

export class CancellationTimeout extends DomainError {
  constructor(seconds: number) {
    super('cancellation_timeout', `Cancellation did not finish within ${seconds} seconds.`, true);
  }
}
