// Conditional GET (decision 0093): a strong ETag on 200 JSON reads, 304 for a matching
// If-None-Match, and Cache-Control: no-store on every answer.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@po/telemetry';
import { createHttpApp } from './app.js';
import { bodyEtag, conditionalGet, matchesIfNoneMatch } from './conditional.js';
import { sendJson } from './respond.js';
import { createRouter } from './router.js';
import { listen, type RunningServer } from './server.js';

let server: RunningServer;
let url: string;
let counter = 0;

beforeAll(async () => {
  const router = createRouter();
  router.get('/thing', (ctx) => sendJson(ctx, 200, { name: 'thing', counter }));
  router.post('/thing', (ctx) => sendJson(ctx, 200, { name: 'thing', counter }));
  router.get('/text', (ctx) => {
    ctx.body = 'plain';
  });
  router.get('/cached', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=60');
    sendJson(ctx, 200, { cached: true });
  });
  const logger = createLogger({ service: 'test', destination: new Writable({ write: (_c, _e, done) => done() }) });
  server = await listen(createHttpApp({ logger, routers: [router], middleware: [conditionalGet()] }), '127.0.0.1', 0);
  url = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server?.close();
});

describe('conditionalGet', () => {
  it('gives a 200 JSON read a strong ETag, the hash of its body, and no-store', async () => {
    const res = await fetch(`${url}/thing`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(bodyEtag(text));
    expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('answers 304 without a body while the body is unchanged, and 200 with a new ETag once it changed', async () => {
    const first = await fetch(`${url}/thing`);
    const etag = first.headers.get('etag')!;
    const again = await fetch(`${url}/thing`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('no-store');
    counter += 1;
    const changed = await fetch(`${url}/thing`, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(await changed.json()).toEqual({ name: 'thing', counter });
  });

  it('matches one of several tags and a weak form of the tag; ignores other tags', async () => {
    const etag = (await fetch(`${url}/thing`)).headers.get('etag')!;
    expect((await fetch(`${url}/thing`, { headers: { 'if-none-match': `"other", W/${etag}` } })).status).toBe(304);
    expect((await fetch(`${url}/thing`, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
  });

  it('leaves other methods, non-JSON bodies and errors without an ETag', async () => {
    const post = await fetch(`${url}/thing`, { method: 'POST' });
    expect(post.headers.get('etag')).toBeNull();
    expect(post.headers.get('cache-control')).toBe('no-store');
    expect((await fetch(`${url}/text`)).headers.get('etag')).toBeNull();
    const missing = await fetch(`${url}/nothing`, { headers: { 'if-none-match': '*' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('etag')).toBeNull();
    expect(missing.headers.get('cache-control')).toBe('no-store');
  });

  it('keeps a Cache-Control a handler set', async () => {
    expect((await fetch(`${url}/cached`)).headers.get('cache-control')).toBe('public, max-age=60');
  });
});

describe('matchesIfNoneMatch', () => {
  it('compares weakly and accepts *', () => {
    expect(matchesIfNoneMatch('"a"', '"a"')).toBe(true);
    expect(matchesIfNoneMatch('W/"a"', '"a"')).toBe(true);
    expect(matchesIfNoneMatch('*', '"a"')).toBe(true);
    expect(matchesIfNoneMatch('"b" , "a"', '"a"')).toBe(true);
    expect(matchesIfNoneMatch('"b"', '"a"')).toBe(false);
    expect(matchesIfNoneMatch('a', '"a"')).toBe(false);
  });
});
