import { Writable } from 'node:stream';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- problem bodies are read loosely
type Json = any;
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokerUnavailable, NotFound } from '@po/domain';
import { createLogger } from '@po/telemetry';
import { createHttpApp } from './app.js';
import { apiKeyAuth, hashSecret } from './auth.js';
import { jsonBody } from './body.js';
import { healthRouter } from './health.js';
import { sendJson } from './respond.js';
import { createRouter } from './router.js';
import { listen, type RunningServer } from './server.js';

const lines: string[] = [];
const logger = createLogger({
  service: 'test',
  destination: new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
});

let server: RunningServer;
let url: string;

beforeAll(async () => {
  const router = createRouter();
  const goodHash = hashSecret('good-key');
  const auth = apiKeyAuth(async (hash) => (hash === goodHash ? { applicationId: 7, keyId: 1 } : null));
  const acceptObject = (data: unknown): { ok: true; value: unknown } | { ok: false; errors: { field: string; message: string }[] } =>
    typeof data === 'object' && data !== null && !Array.isArray(data)
      ? { ok: true, value: data }
      : { ok: false, errors: [{ field: '', message: 'must be an object' }] };
  router.post('/echo', auth, jsonBody(acceptObject, 64), (ctx) => sendJson(ctx, 200, { got: ctx.state.body, app: ctx.state.applicationId }));
  router.get('/boom', () => {
    throw new Error('secret internals');
  });
  router.get('/missing', () => {
    throw new NotFound('No such thing.');
  });
  router.get('/broker-down', () => {
    throw new BrokerUnavailable();
  });
  router.get('/stalled', () => {
    // As Prisma throws it when a transaction outlived its timeout under a lock wait.
    throw Object.assign(new Error('Transaction API error: A commit cannot be executed on an expired transaction.'), {
      name: 'PrismaClientKnownRequestError',
      code: 'P2028',
      meta: { operation: 'commit', timeout: 5000, timeTaken: 5954 },
      clientVersion: '7.10.0',
    });
  });
  const app = createHttpApp({ logger, routers: [healthRouter({ ok: async () => 1, down: async () => Promise.reject(new Error('x')) }), router] });
  server = await listen(app, '127.0.0.1', 0);
  url = `http://127.0.0.1:${server.port}`;
});

afterAll(() => server.close());

const post = (body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = { 'x-api-key': 'good-key' }) =>
  fetch(`${url}/echo`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);

describe('koa app factory', () => {
  it('parses JSON whatever the Content-Type says', async () => {
    const res = await post('{"a":1}', { 'x-api-key': 'good-key', 'content-type': 'text/plain' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { a: 1 }, app: 7 });
  });

  it('answers malformed JSON with a validation problem on the whole body', async () => {
    const res = await post('{"a":');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const body: Json = await res.json();
    expect(body).toMatchObject({ code: 'validation_failed', status: 400, instance: '/echo', errors: [{ field: '' }] });
    expect(body.type).toBe('urn:problem-type:pipeline-orchestration:validation_failed');
  });

  it('refuses a body over the limit by its Content-Length with 413', async () => {
    const res = await post(JSON.stringify({ pad: 'x'.repeat(100) }));
    expect(res.status).toBe(413);
    expect(((await res.json()) as Json).code).toBe('payload_too_large');
  });

  it('refuses a chunked body the moment it passes the limit', async () => {
    const chunk = new TextEncoder().encode('{"pad":"' + 'x'.repeat(40));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const res = await post(stream);
    expect(res.status).toBe(413);
  });

  it('checks credentials before the body size (addendum §3 order)', async () => {
    const res = await post(JSON.stringify({ pad: 'x'.repeat(100) }), {});
    expect(res.status).toBe(401);
    expect(((await res.json()) as Json).code).toBe('unauthorized');
    expect((await post('{}', { 'x-api-key': 'bad' })).status).toBe(401);
  });

  it('answers an unknown route, and a known path with another method, with a 404 problem', async () => {
    for (const res of [await fetch(`${url}/nowhere`), await fetch(`${url}/echo`)]) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as Json).code).toBe('not_found');
    }
  });

  it('maps domain errors by code', async () => {
    const res = await fetch(`${url}/missing`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as Json).detail).toBe('No such thing.');
  });

  it('answers an unexpected error with 500, an error id and no internals, and logs the cause', async () => {
    const res = await fetch(`${url}/boom`);
    expect(res.status).toBe(500);
    const body: Json = await res.json();
    expect(body.code).toBe('internal');
    expect(JSON.stringify(body)).not.toContain('secret internals');
    const errorId = /reference ([\da-f-]+)/.exec(body.detail)?.[1];
    expect(errorId).toBeDefined();
    expect(lines.some((l) => l.includes(errorId!) && l.includes('secret internals'))).toBe(true);
  });

  it('answers a stalled or unreachable database with 503 service_unavailable and Retry-After, not 500', async () => {
    const res = await fetch(`${url}/stalled`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body: Json = await res.json();
    expect(body).toMatchObject({ status: 503, code: 'service_unavailable', title: 'Service unavailable', instance: '/stalled' });
    expect(JSON.stringify(body)).not.toContain('Transaction API');
  });

  it('answers a broker that is away with 503 broker_unavailable and Retry-After (decision 0120)', async () => {
    const res = await fetch(`${url}/broker-down`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await res.json()).toMatchObject({ status: 503, code: 'broker_unavailable' });
  });

  it('uses the trace id of an incoming traceparent as the problem traceId', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${url}/nowhere`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    expect(((await res.json()) as Json).traceId).toBe(traceId);
    const generated = ((await (await fetch(`${url}/nowhere`)).json()) as Json).traceId;
    expect(generated).toMatch(/^[\da-f]{32}$/);
    expect(generated).not.toBe(traceId);
  });

  it('reports readiness per dependency: 503 when one is down', async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'not_ready', checks: { ok: 'ok', down: 'unavailable' } });
  });

  it('never writes the API key header to the access log', async () => {
    await post('{}', { 'x-api-key': 'good-key' });
    expect(lines.join('\n')).not.toContain('good-key');
  });
});

describe('empty responses (addendum §1)', () => {
  it('a 200 "empty" response has no body, Content-Length 0 and keeps status 200; a 204 has no body', async () => {
    const { sendEmpty } = await import('./respond.js');
    const router = createRouter();
    router.post('/empty200', (ctx) => sendEmpty(ctx, 200));
    router.post('/empty204', (ctx) => sendEmpty(ctx, 204));
    const s = await listen(createHttpApp({ logger, routers: [router] }), '127.0.0.1', 0);
    try {
      const ok = await fetch(`http://127.0.0.1:${s.port}/empty200`, { method: 'POST' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-length')).toBe('0');
      expect(await ok.text()).toBe('');
      const none = await fetch(`http://127.0.0.1:${s.port}/empty204`, { method: 'POST' });
      expect(none.status).toBe(204);
      expect(await none.text()).toBe('');
    } finally {
      await s.close();
    }
  });
});
