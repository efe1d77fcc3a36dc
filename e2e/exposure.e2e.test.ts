import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { chartWorkerRouting, nginxAvailability, startNginxFront, type NginxFront } from './support/nginx.js';
import { scrape } from './support/prometheus.js';

/**
 * What the public base URL exposes (issue 10 item 8, decision 0085): GET /metrics only on each
 * service's own metrics port, never through the API ports or the Ingress; and a body over the
 * limit answered by the service as problem+json, not by the proxy as an HTML page. The proxy is
 * the local nginx routed and configured like the chart's Ingress (deploy/local/nginx.mjs).
 */
const OVER_ANY_LIMIT = 40 * 1024 * 1024; // above API_MAX_BODY_BYTES (32 MiB), the largest route limit

describe('exposure of the five services', () => {
  let cluster: Cluster;
  let front: NginxFront | undefined;
  let key: string;

  beforeAll(async () => {
    cluster = await startCluster();
    key = (await cluster.createApp('exposure')).apiKey;
    if (nginxAvailability.nginx) {
      front = await startNginxFront({ apiUrl: cluster.apiUrl, workerUrls: [cluster.workerUrl], hashOn: chartWorkerRouting().hashOn });
    } else console.warn(`[exposure] proxy checks SKIPPED: ${nginxAvailability.reason}`);
  });

  afterAll(async () => {
    await front?.stop();
    await cluster?.stop();
  });

  it('every service answers 404 for /metrics on its API port and serves Prometheus text on its metrics port', async () => {
    for (const s of cluster.services) {
      const publicMetrics = await fetch(`${s.url}/metrics`);
      expect(publicMetrics.status, `${s.name} API port`).toBe(404);
      expect(publicMetrics.headers.get('content-type'), s.name).toMatch(/^application\/problem\+json/);
      const samples = await scrape(s.metricsUrl);
      expect(samples.some((x) => x.name === 'process_cpu_user_seconds_total'), s.name).toBe(true);
      expect((await fetch(`${s.metricsUrl}/readyz`)).status, `${s.name} metrics port serves nothing else`).toBe(404);
    }
  });

  describe.skipIf(!nginxAvailability.nginx)('through the chart\'s routing (local nginx)', () => {
    it('/metrics is not reachable through the public base URL', async () => {
      const res = await fetch(`${front!.url}/metrics`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await res.text()).not.toContain('# TYPE');
    });

    it('a body over every limit gets the service\'s problem+json 413, on both gateways, with a length or chunked', async () => {
      const big = () => Buffer.alloc(OVER_ANY_LIMIT, 0x20);
      const chunked = () =>
        new ReadableStream<Uint8Array>({
          start(controller) {
            const piece = new Uint8Array(1024 * 1024).fill(0x20);
            for (let sent = 0; sent < OVER_ANY_LIMIT; sent += piece.length) controller.enqueue(piece);
            controller.close();
          },
        });
      for (const path of ['/pipelines/idempotent', '/workers/bootstrap']) {
        for (const [how, body] of [['content-length', big()], ['chunked', chunked()]] as const) {
          const res = await fetch(`${front!.url}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key },
            body,
            duplex: 'half',
          } as RequestInit);
          const text = await res.text();
          expect(res.status, `${path} ${how}`).toBe(413);
          expect(res.headers.get('content-type'), `${path} ${how}: ${text.slice(0, 80)}`).toMatch(/^application\/problem\+json/);
          expect(JSON.parse(text)).toMatchObject({ status: 413 });
        }
      }
    });
  });
});
