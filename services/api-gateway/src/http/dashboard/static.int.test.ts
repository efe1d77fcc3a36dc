// The dashboard's files under /ui/ (issue 13, decision 0093): index.html for /ui and every
// client-side route, hashed assets cached for good, index.html revalidated, the CSP and the other
// security headers on every answer, /ui/config.json from the configuration, no API key needed;
// without a build, a 404 problem that says so (never a crash).
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '@po/testing';
import { DASHBOARD_CSP } from './static.js';
import { startGateway, type Gateway, type Reply } from '../../testing/harness.js';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";
const INDEX = '<!doctype html><html><head><script type="module" src="/ui/assets/index-Ab12Cd34.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = 'console.log("dashboard");';

let dist: string;
let gw: Gateway;
let bare: Gateway;

beforeAll(async () => {
  dist = await mkdtemp(join(tmpdir(), 'po-dashboard-dist-'));
  await mkdir(join(dist, 'assets'));
  await writeFile(join(dist, 'index.html'), INDEX);
  await writeFile(join(dist, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
  await writeFile(join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  gw = await startGateway({ dashboardDistDir: dist, traceUrlTemplate: 'https://jaeger.example/trace/{traceId}' });
  bare = await startGateway({ dashboardDistDir: join(dist, 'not-built') });
});
afterAll(async () => {
  await gw?.close();
  await bare?.close();
  await rm(dist, { recursive: true, force: true });
});

function expectSecurityHeaders(reply: Reply) {
  expect(reply.headers.get('content-security-policy')).toBe(CSP);
  expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
  expect(reply.headers.get('referrer-policy')).toBe('no-referrer');
}

describe('GET /ui/', () => {
  it('serves index.html without an API key, revalidated on every use, with the CSP', async () => {
    expect(DASHBOARD_CSP).toBe(CSP);
    for (const path of ['/ui/', '/ui']) {
      const reply = await gw.call('GET', path, { key: null });
      expect(reply.status, path).toBe(200);
      expect(reply.text).toBe(INDEX);
      expect(reply.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(reply.headers.get('cache-control')).toBe('no-cache');
      expect(reply.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]+"$/);
      expectSecurityHeaders(reply);
    }
  });

  it('answers index.html for client-side routes (paths without a file extension)', async () => {
    for (const path of ['/ui/pipelines', '/ui/pipelines/42', '/ui/schedules/Nightly%20import', '/ui/workers?x=1']) {
      const reply = await gw.call('GET', path, { key: null });
      expect(reply.status, path).toBe(200);
      expect(reply.text, path).toBe(INDEX);
      expect(reply.headers.get('cache-control')).toBe('no-cache');
      expectSecurityHeaders(reply);
    }
  });

  it('serves hashed assets as immutable for a year, other files revalidated', async () => {
    const script = await gw.call('GET', '/ui/assets/index-Ab12Cd34.js', { key: null });
    expect(script.status).toBe(200);
    expect(script.text).toBe(SCRIPT);
    expect(script.headers.get('content-type')).toMatch(/^(application|text)\/javascript/);
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(script);
    const icon = await gw.call('GET', '/ui/favicon.svg', { key: null });
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers 304 to a revalidation of an unchanged file', async () => {
    const etag = (await gw.call('GET', '/ui/', { key: null })).headers.get('etag')!;
    const again = await gw.call('GET', '/ui/pipelines', { key: null, headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('a missing file with an extension, a path out of the build and other methods are 404 problems', async () => {
    for (const path of ['/ui/assets/missing-123.js', '/ui/assets/%2e%2e%2f%2e%2e%2fpackage.json', '/ui/..%2f..%2f..%2fpackage.json', '/ui/%E0%A4%A']) {
      const reply = await gw.call('GET', path, { key: null });
      expectProblem(reply, 404, 'not_found');
      expectSecurityHeaders(reply);
    }
    // fetch resolves a plain `..` itself; what reaches the server is outside /ui/ and not a route.
    expectProblem(await gw.call('GET', '/ui/%2e%2e/package.json', { key: null }), 404, 'not_found');
    expectProblem(await gw.call('POST', '/ui/', { key: null, json: {} }), 404, 'not_found');
  });

  it('GET /ui/config.json gives the trace URL template and the version', async () => {
    const reply = await gw.call('GET', '/ui/config.json', { key: null });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(reply.body).toEqual({ traceUrlTemplate: 'https://jaeger.example/trace/{traceId}', version: '0.5.0' });
    expect(reply.headers.get('cache-control')).toBe('no-store');
    const unset = await bare.call('GET', '/ui/config.json', { key: null });
    expect(unset.body).toEqual({ traceUrlTemplate: null, version: '0.5.0' });
  });

  it('without a build, /ui/ is a 404 problem saying the dashboard was not built', async () => {
    for (const path of ['/ui/', '/ui/pipelines', '/ui/assets/index-Ab12Cd34.js']) {
      const reply = await bare.call('GET', path, { key: null });
      expectProblem(reply, 404, 'not_found');
      expect(reply.body.detail).toMatch(/dashboard was not built/);
    }
    // The API is unaffected.
    expect((await bare.call('GET', '/version', { key: null })).status).toBe(200);
  });
});
