import { describe, expect, it } from 'vitest';
import { ConnectionError } from './errors.js';
import { DEFAULT_RETRY, isRepeatable, parseRetryAfter, retryDelay, withRetries } from './retry.js';

const NOW = Date.parse('2025-03-01T12:00:00.000Z');

describe('Retry-After', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('1', NOW)).toBe(1000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
  });

  it('reads an HTTP-date as the time left until then, 0 when it is past', () => {
    expect(parseRetryAfter('Sat, 01 Mar 2025 12:00:05 GMT', NOW)).toBe(5000);
    expect(parseRetryAfter('Sat, 01 Mar 2025 11:00:00 GMT', NOW)).toBe(0);
  });

  it('ignores what is neither', () => {
    for (const value of [null, undefined, '', '1.5', '-1', 'soon', 'Xyz, 99 Foo 2025']) {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    }
  });
});

describe('retry delay', () => {
  const options = { ...DEFAULT_RETRY, attempts: 4, baseDelayMs: 100, maxDelayMs: 1000 };

  it('honours Retry-After, up to maxDelayMs; an answer asking for more is not retried', () => {
    expect(retryDelay('1', 1, options, NOW)).toBe(1000);
    expect(retryDelay('2', 1, options, NOW)).toBeUndefined();
  });

  it('backs off exponentially without Retry-After, capped', () => {
    expect([1, 2, 3].map((n) => retryDelay(null, n, { ...options, attempts: 10 }, NOW))).toEqual([
      100, 200, 400,
    ]);
    expect(retryDelay(null, 5, { ...options, attempts: 10 }, NOW)).toBe(1000);
  });

  it('stops after the last attempt', () => {
    expect(retryDelay('0', 4, options, NOW)).toBeUndefined();
  });
});

describe('which requests are repeated', () => {
  it('methods that are idempotent by definition', () => {
    for (const method of ['GET', 'get', 'HEAD', 'PUT', 'DELETE'])
      expect(isRepeatable(method, '/schedules/x')).toBe(true);
  });

  it('idempotent creation, the lookup by key and a backfill, also under a path prefix', () => {
    expect(isRepeatable('POST', '/pipelines/idempotent')).toBe(true);
    expect(isRepeatable('POST', '/api/pipelines/by-idempotency-key/')).toBe(true);
    expect(isRepeatable('POST', '/schedules/nightly%20run/backfill')).toBe(true);
  });

  it('never a POST that acts each time it arrives', () => {
    for (const path of [
      '/pipelines',
      '/pipelines/1/cancel',
      '/pipelines/1/stages',
      '/pipelines/1/rerun',
      '/schedules/x/trigger',
      '/stages/1/resume',
    ]) {
      expect(isRepeatable('POST', path)).toBe(false);
    }
  });
});

describe('withRetries', () => {
  const problem = (status: number, headers: Record<string, string> = {}) =>
    new Response(
      JSON.stringify({ code: status === 429 ? 'too_many_inflight' : 'service_unavailable' }),
      {
        status,
        headers: { 'content-type': 'application/problem+json', ...headers },
      },
    );

  function recorder(answers: Response[]) {
    const seen: { method: string; body: string }[] = [];
    const waits: number[] = [];
    const fetchImpl = async (request: Request) => {
      seen.push({ method: request.method, body: await request.text() });
      const next = answers.shift();
      if (!next) throw new Error('no more answers');
      return next;
    };
    return { seen, waits, fetchImpl, wait: async (ms: number) => void waits.push(ms) };
  }

  it('sends a GET again after a 503, waiting what Retry-After asks', async () => {
    const r = recorder([
      problem(503, { 'retry-after': '2' }),
      new Response('{"ok":true}', { status: 200 }),
    ]);
    const fetch = withRetries(r.fetchImpl, DEFAULT_RETRY, r.wait, () => NOW);
    const res = await fetch(new Request('http://api.test/pipelines/1'));
    expect(res.status).toBe(200);
    expect(r.waits).toEqual([2000]);
    expect(r.seen).toHaveLength(2);
  });

  it('sends the same body again for an idempotent creation', async () => {
    const r = recorder([problem(429, { 'retry-after': '0' }), new Response('{}', { status: 201 })]);
    const fetch = withRetries(r.fetchImpl, DEFAULT_RETRY, r.wait, () => NOW);
    const body = JSON.stringify({ idempotencyKey: 'k', name: 'n', stages: [] });
    const res = await fetch(
      new Request('http://api.test/pipelines/idempotent', { method: 'POST', body }),
    );
    expect(res.status).toBe(201);
    expect(r.seen.map((s) => s.body)).toEqual([body, body]);
  });

  it('returns the last answer once the attempts are spent', async () => {
    const r = recorder([problem(503), problem(503), problem(503)]);
    const fetch = withRetries(
      r.fetchImpl,
      { ...DEFAULT_RETRY, attempts: 3, baseDelayMs: 10 },
      r.wait,
      () => NOW,
    );
    expect((await fetch(new Request('http://api.test/workers'))).status).toBe(503);
    expect(r.waits).toEqual([10, 20]);
    expect(r.seen).toHaveLength(3);
  });

  it('never repeats a cancel', async () => {
    const r = recorder([problem(503, { 'retry-after': '0' })]);
    const fetch = withRetries(r.fetchImpl, DEFAULT_RETRY, r.wait, () => NOW);
    expect(
      (await fetch(new Request('http://api.test/pipelines/1/cancel', { method: 'POST' }))).status,
    ).toBe(503);
    expect(r.seen).toHaveLength(1);
  });

  it('does not retry other errors', async () => {
    const r = recorder([problem(500)]);
    const fetch = withRetries(r.fetchImpl, DEFAULT_RETRY, r.wait, () => NOW);
    expect((await fetch(new Request('http://api.test/pipelines/1'))).status).toBe(500);
    expect(r.waits).toEqual([]);
  });

  it('turns a failed connection into a ConnectionError naming the URL without its query', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: new Error('connect ECONNREFUSED 127.0.0.1:9'),
    });
    const fetch = withRetries(() => Promise.reject(refused), DEFAULT_RETRY);
    const err = await fetch(new Request('http://127.0.0.1:9/pipelines?cursor=secretish')).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toBe(
      'no answer from GET http://127.0.0.1:9/pipelines: connect ECONNREFUSED 127.0.0.1:9',
    );
  });
});
