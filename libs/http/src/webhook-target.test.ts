// One webhook attempt against a real local HTTP server (no database): Standard Webhooks headers,
// a 3xx is a failure and is not followed, the deadline holds, and an internal address is refused
// before any connection unless private networks are allowed (decision 0134).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret } from '@po/domain';
import { refusedWebhookTarget, sendWebhook } from './webhook-target.js';

let server: Server;
let base = '';
const seen: { path: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      if (req.url === '/redirect') res.writeHead(302, { location: '/ok' }).end();
      else if (req.url === '/slow') setTimeout(() => res.writeHead(200).end(), 2000);
      else if (req.url === '/error') res.writeHead(500).end('no');
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const attempt = (path: string, over: Partial<Parameters<typeof sendWebhook>[0]> = {}) =>
  sendWebhook({
    url: `${base}${path}`,
    secret: newWebhookSecret(),
    id: 'msg_0123456789abcdef0123456789abcdef',
    body: '{"type":"pipeline.completed"}',
    timeoutMs: 1000,
    allowPrivateNetworks: true,
    userAgent: 'test',
    ...over,
  });

describe('sendWebhook', () => {
  it('POSTs the body with Standard Webhooks headers that the standardwebhooks verifier accepts; a 2xx is delivered', async () => {
    const secret = newWebhookSecret();
    expect(await attempt('/ok', { secret })).toEqual({ ok: true, status: 204 });
    const got = seen.find((s) => s.path === '/ok')!;
    expect(got.body).toBe('{"type":"pipeline.completed"}');
    expect(got.headers['webhook-id']).toBe('msg_0123456789abcdef0123456789abcdef');
    const headers = Object.fromEntries(Object.entries(got.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(secret).verify(got.body, headers)).toEqual({ type: 'pipeline.completed' });
  });

  it('does not follow a redirect: a 3xx is a failed attempt', async () => {
    const before = seen.length;
    expect(await attempt('/redirect')).toEqual({
      ok: false,
      status: 302,
      error: 'redirect (302) not followed',
    });
    expect(seen.slice(before).map((s) => s.path)).toEqual(['/redirect']);
  });

  it('fails a non-2xx answer with its status, and an attempt past its deadline', async () => {
    expect(await attempt('/error')).toEqual({ ok: false, status: 500, error: 'answered 500' });
    const started = Date.now();
    const slow = await attempt('/slow', { timeoutMs: 300 });
    expect(slow).toEqual({ ok: false, status: null, error: 'no answer within 300 ms' });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('refuses a loopback target without connecting unless private networks are allowed', async () => {
    const before = seen.length;
    const refused = await attempt('/ok', { allowPrivateNetworks: false });
    expect(refused).toMatchObject({
      ok: false,
      status: null,
      error: expect.stringMatching(/private, loopback or link-local/),
    });
    const byName = await sendWebhook({
      url: `${base.replace('127.0.0.1', 'localhost')}/ok`,
      secret: newWebhookSecret(),
      id: 'msg_1',
      body: '{}',
      timeoutMs: 1000,
      allowPrivateNetworks: false,
      userAgent: 't',
    });
    expect(byName).toMatchObject({
      ok: false,
      status: null,
      error: expect.stringMatching(/private, loopback or link-local/),
    });
    expect(seen.length).toBe(before);
  });
});

describe('refusedWebhookTarget', () => {
  it('names the internal address a host resolves to, and allows anything with the setting', async () => {
    expect(await refusedWebhookTarget(new URL('http://localhost/x'), false)).toMatch(
      /resolves to (127\.0\.0\.1|::1), a private, loopback or link-local address/,
    );
    expect(await refusedWebhookTarget(new URL('http://[fe80::1]/x'), false)).toMatch(/fe80::1/);
    expect(await refusedWebhookTarget(new URL('http://93.184.216.34/x'), false)).toBeNull();
    expect(await refusedWebhookTarget(new URL('http://localhost/x'), true)).toBeNull();
  });
});
