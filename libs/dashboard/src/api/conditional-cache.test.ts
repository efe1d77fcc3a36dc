import { describe, expect, it } from 'vitest';
import { conditionalGet, EtagCache, type Fetch } from './conditional-cache';

/** A fake API: answers from a script, recording the If-None-Match of each request. */
function scripted(answers: Array<() => Response>) {
  const seen: Array<string | undefined> = [];
  const fetchFn: Fetch = async (_url, init) => {
    seen.push((init.headers as Record<string, string>)['If-None-Match']);
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    return next();
  };
  return { fetchFn, seen };
}
const json = (body: unknown, etag?: string) => () =>
  new Response(JSON.stringify(body), { status: 200, headers: etag ? { ETag: etag } : {} });
const notModified = () => new Response(null, { status: 304 });

describe('conditionalGet', () => {
  it('sends the last ETag and reuses the very same body on 304', async () => {
    const cache = new EtagCache();
    const { fetchFn, seen } = scripted([json({ items: [1] }, '"v1"'), notModified]);
    const first = await conditionalGet(fetchFn, cache, '/pipelines', { headers: {} });
    const second = await conditionalGet(fetchFn, cache, '/pipelines', { headers: {} });
    expect(seen).toEqual([undefined, '"v1"']);
    expect(second).toMatchObject({ status: 304, fromCache: true });
    expect((second as { body: unknown }).body).toBe((first as { body: unknown }).body);
  });

  it('replaces the cached body and ETag when the resource changed', async () => {
    const cache = new EtagCache();
    const { fetchFn, seen } = scripted([
      json({ n: 1 }, '"v1"'),
      json({ n: 2 }, '"v2"'),
      notModified,
    ]);
    await conditionalGet(fetchFn, cache, '/x', { headers: {} });
    const changed = await conditionalGet(fetchFn, cache, '/x', { headers: {} });
    const again = await conditionalGet(fetchFn, cache, '/x', { headers: {} });
    expect(changed).toMatchObject({ body: { n: 2 }, fromCache: false });
    expect(again).toMatchObject({ body: { n: 2 }, fromCache: true });
    expect(seen).toEqual([undefined, '"v1"', '"v2"']);
  });

  it('keeps the other request headers (the API key) on conditional requests', async () => {
    const cache = new EtagCache();
    const keys: Array<string | undefined> = [];
    const fetchFn: Fetch = async (_url, init) => {
      keys.push((init.headers as Record<string, string>)['X-API-Key']);
      return keys.length === 1 ? json({}, '"a"')() : notModified();
    };
    await conditionalGet(fetchFn, cache, '/x', { headers: { 'X-API-Key': 'k' } });
    await conditionalGet(fetchFn, cache, '/x', { headers: { 'X-API-Key': 'k' } });
    expect(keys).toEqual(['k', 'k']);
  });

  it('asks again without a condition when a 304 finds nothing cached', async () => {
    const cache = new EtagCache();
    cache.set('/x', '"old"', { n: 0 });
    const { fetchFn, seen } = scripted([
      () => {
        cache.clear(); // signed out while the request was in flight
        return notModified();
      },
      json({ n: 1 }, '"v1"'),
    ]);
    const out = await conditionalGet(fetchFn, cache, '/x', { headers: {} });
    expect(out).toMatchObject({ status: 200, body: { n: 1 }, fromCache: false });
    expect(seen).toEqual(['"old"', undefined]);
  });

  it('caches nothing for an answer without an ETag, and hands error answers back unread', async () => {
    const cache = new EtagCache();
    const { fetchFn } = scripted([
      json({ n: 1 }),
      () => new Response('{"code":"unauthorized"}', { status: 401 }),
    ]);
    await conditionalGet(fetchFn, cache, '/x', { headers: {} });
    expect(cache.size).toBe(0);
    const out = await conditionalGet(fetchFn, cache, '/x', { headers: {} });
    expect(out).toBeInstanceOf(Response);
    expect((out as Response).status).toBe(401);
  });
});

describe('EtagCache', () => {
  it('forgets the least recently used URL beyond its size', () => {
    const cache = new EtagCache(2);
    cache.set('/a', '"a"', 1);
    cache.set('/b', '"b"', 2);
    cache.get('/a'); // /a is now more recent than /b
    cache.set('/c', '"c"', 3);
    expect(cache.get('/b')).toBeUndefined();
    expect(cache.get('/a')).toEqual({ etag: '"a"', body: 1 });
    expect(cache.get('/c')).toEqual({ etag: '"c"', body: 3 });
  });
});
