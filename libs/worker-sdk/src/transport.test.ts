import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpFetch } from './transport.js';

let server: Server;
let base: string;
const seen: { method?: string; headers: Record<string, unknown>; body: string; socket: unknown }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method, headers: req.headers, body, socket: req.socket });
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2000);
      res.writeHead(req.url === '/busy' ? 429 : 200, { 'content-type': 'application/json', 'retry-after': '3' });
      res.end(JSON.stringify({ echo: body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('httpFetch (the SDK transport)', () => {
  it('sends method, headers and a body with its byte length, and reads status, headers and text', async () => {
    const res = await httpFetch(`${base}/x`, { method: 'POST', headers: { 'x-api-key': 'k', 'content-type': 'application/json' }, body: '{"é":1}' });
    expect(res.status).toBe(200);
    expect(res.headers.get('Retry-After')).toBe('3');
    expect(res.headers.get('x-missing')).toBeNull();
    expect(JSON.parse(await res.text())).toEqual({ echo: '{"é":1}' });
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ method: 'POST', body: '{"é":1}' });
    expect(last.headers).toMatchObject({ 'x-api-key': 'k', 'content-length': String(Buffer.byteLength('{"é":1}')) });
  });

  it('answers non-2xx statuses instead of throwing (the client maps them)', async () => {
    expect((await httpFetch(`${base}/busy`, { method: 'POST', headers: {} })).status).toBe(429);
  });

  it('keeps the connection alive between requests', async () => {
    await httpFetch(`${base}/a`, { method: 'POST', headers: {}, body: '1' });
    await httpFetch(`${base}/b`, { method: 'POST', headers: {}, body: '2' });
    expect(seen.at(-1)!.socket).toBe(seen.at(-2)!.socket);
  });

  it('rejects when its signal aborts', async () => {
    const controller = new AbortController();
    const pending = httpFetch(`${base}/slow`, { method: 'POST', headers: {}, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 20);
    await expect(pending).rejects.toThrow();
  });
});
