import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@po/telemetry';
import { createHttpApp } from './app.js';
import { healthRouter } from './health.js';
import { listenMetrics } from './metrics.js';
import { sendJson } from './respond.js';
import { createRouter } from './router.js';
import { listen, type RunningServer } from './server.js';

const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, done) => done() }) });
let api: RunningServer;
let metrics: RunningServer;
let apiUrl: string;
let metricsUrl: string;

beforeAll(async () => {
  const router = createRouter();
  router.get('/things/:id', (ctx) => sendJson(ctx, 200, { id: ctx.params.id }));
  api = await listen(createHttpApp({ logger, routers: [healthRouter({}), router] }), '127.0.0.1', 0);
  metrics = await listenMetrics('127.0.0.1', 0);
  apiUrl = `http://127.0.0.1:${api.port}`;
  metricsUrl = `http://127.0.0.1:${metrics.port}`;
});

afterAll(async () => {
  await api.close();
  await metrics.close();
});

describe('GET /metrics on its own port', () => {
  it('the public API port answers 404 problem+json for /metrics', async () => {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${apiUrl}/metrics`, { method });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  });

  it('the metrics port serves the Prometheus text, including the API port\'s request metrics', async () => {
    expect((await fetch(`${apiUrl}/things/7`)).status).toBe(200);
    const res = await fetch(`${metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/po_http_request_duration_seconds_count\{method="GET",route="\/things\/:id",status="200"\} 1/);
    expect(text).toMatch(/po_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} \d/);
    const head = await fetch(`${metricsUrl}/metrics`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('the metrics port serves nothing else: no API, no health endpoints, no other method', async () => {
    for (const [method, path] of [['GET', '/things/7'], ['GET', '/readyz'], ['GET', '/'], ['POST', '/metrics']]) {
      expect((await fetch(`${metricsUrl}${path}`, { method })).status, `${method} ${path}`).toBe(404);
    }
    expect((await fetch(`${metricsUrl}/metrics?name=x`)).status).toBe(200);
  });
});
