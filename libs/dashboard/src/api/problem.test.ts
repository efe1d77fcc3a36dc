import { describe, expect, it } from 'vitest';
import { ApiError, isEndpointMissing, toApiError } from './problem';

describe('toApiError', () => {
  it('reads a problem+json body with its per-field errors (addendum §3)', () => {
    const body = JSON.stringify({
      type: 'urn:problem-type:pipeline-orchestration:validation_failed',
      title: 'Validation failed',
      status: 400,
      detail: 'The request is invalid.',
      instance: '/pipelines',
      code: 'validation_failed',
      traceId: 'abc',
      errors: [{ field: 'createdAfter', message: 'must be a date-time with an offset' }],
    });
    const error = toApiError(400, body);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 400,
      code: 'validation_failed',
      title: 'Validation failed',
      traceId: 'abc',
    });
    expect(error.errors).toEqual([
      { field: 'createdAfter', message: 'must be a date-time with an offset' },
    ]);
  });

  it('describes an answer that is not a problem by its status', () => {
    const error = toApiError(502, '<html>Bad gateway</html>', 'Bad Gateway');
    expect(error).toMatchObject({
      status: 502,
      code: 'unexpected_response',
      title: 'Bad Gateway',
      errors: [],
    });
  });

  it('ignores malformed error items rather than failing on them', () => {
    const error = toApiError(
      400,
      JSON.stringify({ code: 'validation_failed', errors: [null, 'x', { field: 'name' }] }),
    );
    expect(error.errors).toEqual([{ field: 'name', message: '' }]);
  });
});

describe('isEndpointMissing', () => {
  it('tells an unknown route from an unknown resource', () => {
    expect(
      isEndpointMissing(
        toApiError(404, JSON.stringify({ code: 'not_found', detail: 'No such route.' })),
      ),
    ).toBe(true);
    expect(
      isEndpointMissing(
        toApiError(404, JSON.stringify({ code: 'not_found', detail: 'No such pipeline.' })),
      ),
    ).toBe(false);
    expect(isEndpointMissing(new Error('x'))).toBe(false);
  });
});
