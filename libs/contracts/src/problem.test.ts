import { describe, expect, it } from 'vitest';
import {
  compile,
  problemCodes,
  problemDetails,
  problemDetailsSchema,
  problemType,
} from './index.js';
import { errorsOf } from './validation.test-support.js';

describe('problem details (addendum §3)', () => {
  it('maps every code to the HTTP status of the table', () => {
    const statuses = Object.fromEntries(
      Object.entries(problemCodes).map(([code, { status }]) => [code, status]),
    );
    expect(statuses).toEqual({
      validation_failed: 400,
      not_plannable: 400,
      unauthorized: 401,
      forbidden: 403,
      not_found: 404,
      conflict: 409,
      idempotency_conflict: 409,
      pipeline_terminal: 409,
      pipeline_not_terminal: 409,
      pipeline_not_failed: 409,
      stage_not_waiting: 409,
      decision_conflict: 409,
      schedule_archived: 409,
      no_future_run: 409,
      request_timeout: 408,
      payload_too_large: 413,
      request_header_too_large: 431,
      too_many_inflight: 429,
      rate_limited: 429,
      internal: 500,
      broker_unavailable: 503,
      service_unavailable: 503,
      cancellation_timeout: 504,
    });
    expect(problemCodes.validation_failed.title).toBe('Validation failed');
  });

  it('type is urn:problem-type:pipeline-orchestration:{code}', () => {
    expect(problemType('not_found')).toBe('urn:problem-type:pipeline-orchestration:not_found');
  });

  it('builds a validation_failed problem with its errors, and others without errors', () => {
    const validate = compile(problemDetailsSchema, { normalise: false });
    const invalid = problemDetails({
      code: 'validation_failed',
      detail: 'The body is invalid.',
      instance: '/pipelines',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      errors: [{ field: '/name', message: 'is required' }],
    });
    expect(invalid).toEqual({
      type: 'urn:problem-type:pipeline-orchestration:validation_failed',
      title: 'Validation failed',
      status: 400,
      detail: 'The body is invalid.',
      instance: '/pipelines',
      code: 'validation_failed',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      errors: [{ field: '/name', message: 'is required' }],
    });
    expect(validate(invalid).ok).toBe(true);

    const missing = problemDetails({
      code: 'not_found',
      detail: 'No pipeline 12.',
      instance: '/pipelines/12',
      traceId: 't',
      errors: [{ field: 'x', message: 'ignored' }],
    });
    expect('errors' in missing).toBe(false);
    expect(validate(missing).ok).toBe(true);
  });

  it('the schema rejects an unknown code and an empty errors list', () => {
    const validate = compile(problemDetailsSchema, { normalise: false });
    const base = problemDetails({ code: 'internal', detail: 'd', instance: '/x', traceId: 't' });
    expect(errorsOf(validate({ ...base, code: 'oops' }))[0]?.field).toBe('/code');
    expect(errorsOf(validate({ ...base, errors: [] }))).toEqual([
      { field: '/errors', message: 'must have at least 1 item' },
    ]);
  });
});
