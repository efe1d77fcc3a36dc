import { describe, expect, it } from 'vitest';
import { ProblemError, UNEXPECTED_RESPONSE, toProblemError } from './errors.js';

describe('problem errors (addendum §3)', () => {
  it('carry the code, title, detail, per-field errors and trace id of a problem body', () => {
    const err = toProblemError(400, 'Bad Request', {
      type: 'urn:problem-type:pipeline-orchestration:validation_failed',
      title: 'Validation failed',
      status: 400,
      detail: 'the request is invalid',
      instance: '/pipelines/idempotent',
      code: 'validation_failed',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      errors: [
        { field: '/stages/0/stageName', message: 'must NOT have fewer than 1 characters' },
        { bogus: true },
      ],
    });
    expect(err).toBeInstanceOf(ProblemError);
    expect(err).toMatchObject({
      status: 400,
      code: 'validation_failed',
      title: 'Validation failed',
      detail: 'the request is invalid',
      instance: '/pipelines/idempotent',
      traceId: '0af7651916cd43dd8448eb211c80319c',
      errors: [{ field: '/stages/0/stageName', message: 'must NOT have fewer than 1 characters' }],
    });
    expect(err.message).toBe(
      'Validation failed (validation_failed, HTTP 400): the request is invalid',
    );
    expect(err.toJSON()).toMatchObject({
      code: 'validation_failed',
      errors: [{ field: '/stages/0/stageName' }],
    });
  });

  it('keep Retry-After seconds', () => {
    expect(
      toProblemError(429, '', { code: 'too_many_inflight', title: 'Too many', detail: 'd' }, '1')
        .retryAfterSeconds,
    ).toBe(1);
  });

  it('describe an answer that is not a problem (a proxy page) with its status', () => {
    const err = toProblemError(502, 'Bad Gateway', '<html>\n <h1>502 Bad Gateway</h1></html>');
    expect(err).toMatchObject({
      status: 502,
      code: UNEXPECTED_RESPONSE,
      title: 'Bad Gateway',
      detail: '<html> <h1>502 Bad Gateway</h1></html>',
      errors: [],
    });
    expect(toProblemError(500, '', undefined).detail).toBe('HTTP 500 without a problem body');
    expect(toProblemError(404, 'Not Found', { message: 'no' }).code).toBe(UNEXPECTED_RESPONSE);
  });
});
