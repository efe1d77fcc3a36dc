import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { metricsText } from '@po/telemetry';
import { startListening, type RunningServer } from './server.js';

/**
 * GET /metrics: this process's Prometheus metrics (text exposition format 0.0.4), on a listener of
 * its own (METRICS_PORT), never on the API port. The chart's Ingress and HTTPRoutes name API ports
 * only, so the metrics cannot be reached from outside, and a NetworkPolicy can open this port to
 * Prometheus alone (decision 0085). Not an operation of the product API, so not in the OpenAPI
 * document (decision 0052).
 */
async function serveMetrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found: this port serves GET /metrics only.\n');
    return;
  }
  try {
    const { contentType, body } = await metricsText();
    res.writeHead(200, { 'Content-Type': contentType }).end(req.method === 'HEAD' ? undefined : body);
  } catch {
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics collection failed\n');
  }
}

/** Starts the metrics listener; `close()` it last on shutdown, so the drain itself can be scraped. */
export async function listenMetrics(host: string, port: number): Promise<RunningServer> {
  return startListening(createServer((req, res) => void serveMetrics(req, res)), host, port);
}
