import { problemCodes, problemDetails, type ProblemCode, type ProblemDetails } from '@po/contracts';
import type { FieldError } from '@po/domain';

export function problemStatus(code: ProblemCode): number {
  return problemCodes[code].status;
}

/** RFC 9457 problem details (addendum §3), from the one code table in @po/contracts. */
export function toProblem(code: ProblemCode, detail: string, ctx: { path: string; traceId: string }, errors?: FieldError[]): ProblemDetails {
  return problemDetails({
    code,
    detail,
    instance: ctx.path,
    traceId: ctx.traceId,
    ...(code === 'validation_failed' ? { errors: errors && errors.length > 0 ? errors : [{ field: '', message: detail }] } : {}),
  });
}
