import { expect } from 'vitest';
import { compile, problemDetailsSchema, type FieldError, type JsonSchema } from '@po/contracts';

/** What the service harnesses' `call()` returns. */
export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
}

const problemShape = compile(problemDetailsSchema, { normalise: false });

/** The body matches a response schema of @po/contracts (every listed field, nothing extra). */
export function expectValid(schema: JsonSchema, body: unknown): void {
  const checked = compile(schema, { normalise: false })(body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
}

/**
 * An `application/problem+json` answer of addendum §3 with this status and code; for
 * validation_failed, exactly these `errors[].field` values (in any order).
 */
export function expectProblem(reply: HttpReply, status: number, code: string, fields?: string[]): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const checked = problemShape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(reply.body).toMatchObject({ status, code, type: `urn:problem-type:pipeline-orchestration:${code}` });
  if (code === 'validation_failed') {
    const got = [...new Set((reply.body.errors as FieldError[]).map((e) => e.field))].sort();
    expect(got).toEqual([...(fields ?? [])].sort());
  } else {
    expect(reply.body.errors).toBeUndefined();
  }
}

/** An "empty" answer of the spec: no body, and Content-Length 0 on a 200 (addendum §1). */
export function expectEmpty(reply: HttpReply, status: 200 | 204 = 200): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.text).toBe('');
  if (status === 200) expect(reply.headers.get('content-length')).toBe('0');
}
