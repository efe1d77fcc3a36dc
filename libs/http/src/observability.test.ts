import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, shutdownTracing, startTracing, type SpanLine } from '@po/telemetry';
import { createHttpApp } from './app.js';
import { healthRouter } from './health.js';
import { listenMetrics } from './metrics.js';
import { sendJson } from './respond.js';
import { createRouter } from './router.js';
import { listen, type RunningServer } from './server.js';

// Tracing on (file exporter) for this test file; GET /metrics (its own port) and the HTTP metrics are always on.
let dir: string;
let server: RunningServer;
let metrics: RunningServer;
let url: string;
const lines: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'po-http-spans-'));
  await startTracing({ serviceName: 'http-test', env: { OTEL_TRACES_EXPORTER: 'file', OTEL_FILE_EXPORTER_PATH: join(dir, 'spans.jsonl') } });
  const logger = createLogger({ service: 'test', destination: new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }) });
  const router = createRouter();
  router.get('/things/:id', (ctx) => sendJson(ctx, 200, { id: ctx.params.id }));
  server = await listen(createHttpApp({ logger, routers: [healthRouter({}), router] }), '127.0.0.1', 0);
  url = `http://127.0.0.1:${server.port}`;
  metrics = await listenMetrics('127.0.0.1', 0);
});

afterAll(async () => {
  await server.close();
  await metrics.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('requests with tracing on', () => {
  it('honour an incoming traceparent: the SERVER span is its child, named after the route, and the access log carries its ids', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect((await fetch(`${url}/things/42`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })).status).toBe(200);
    const missing = await fetch(`${url}/nowhere`);
    const problemTrace = ((await missing.json()) as { traceId: string }).traceId;
    await shutdownTracing();
    const spans = readFileSync(join(dir, 'spans.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as SpanLine);
    const thing = spans.find((s) => s.name === 'GET /things/:id');
    expect(thing).toMatchObject({ kind: 'SERVER', traceId, parentSpanId: '00f067aa0ba902b7', attributes: { 'http.route': '/things/:id', 'http.response.status_code': 200 } });
    // Without a traceparent the span starts a trace, and the problem's traceId is that trace.
    expect(spans.find((s) => s.name === 'GET unmatched')).toMatchObject({ traceId: problemTrace, parentSpanId: null });
    const access = lines.map((l) => JSON.parse(l)).find((l) => l.route === '/things/:id');
    expect(access).toMatchObject({ msg: 'request', traceId, spanId: thing!.spanId, status: 200 });
  });

  it('serve GET /metrics in the Prometheus text format, with request durations by method, route and status', async () => {
    const res = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain('# TYPE po_http_request_duration_seconds histogram');
    expect(text).toMatch(/po_http_request_duration_seconds_count\{method="GET",route="\/things\/:id",status="200"\} 1/);
    expect(text).toMatch(/po_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1/);
  });
});
