import { describe, expect, it } from 'vitest';
import { ApiClient } from './client';
import type { Fetch } from './conditional-cache';
import { ApiError, NetworkError } from './problem';

function memoryStorage() {
  const data = new Map<string, string>();
  return {
    data,
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => void data.set(k, v),
    removeItem: (k: string) => void data.delete(k),
  };
}

type Call = { url: string; init: RequestInit };
function recording(answer: (call: Call) => Response) {
  const calls: Call[] = [];
  const fetchFn: Fetch = async (url, init) => {
    const call = { url, init };
    calls.push(call);
    return answer(call);
  };
  return { calls, fetchFn };
}
const headersOf = (call: Call | undefined) => (call?.init.headers ?? {}) as Record<string, string>;
const problem = (status: number, code: string) =>
  new Response(JSON.stringify({ status, code, title: code, detail: 'd' }), {
    status,
    headers: { 'Content-Type': 'application/problem+json' },
  });

describe('ApiClient', () => {
  it('sends the key in X-API-Key, same-origin, and never in the URL', async () => {
    const storage = memoryStorage();
    const { calls, fetchFn } = recording(() => Response.json({ items: [] }));
    const api = new ApiClient({ fetch: fetchFn, storage });
    api.signIn('pos_secret');
    await api.get('/pipelines?limit=50');
    expect(calls[0]!.url).toBe('/pipelines?limit=50');
    expect(headersOf(calls[0])['X-API-Key']).toBe('pos_secret');
    expect(calls.some((c) => c.url.includes('pos_secret'))).toBe(false);
  });

  it('keeps the key in the given (session) storage and forgets it on sign-out', () => {
    const storage = memoryStorage();
    const api = new ApiClient({ fetch: recording(() => Response.json({})).fetchFn, storage });
    api.signIn('pos_k');
    expect(api.apiKey).toBe('pos_k');
    api.signOut();
    expect(api.apiKey).toBeNull();
    expect(storage.data.size).toBe(0);
  });

  it('signs out on a 401 and tells the app, dropping every cached body', async () => {
    const storage = memoryStorage();
    let status = 200;
    const { fetchFn } = recording(() =>
      status === 200
        ? new Response('{"n":1}', { headers: { ETag: '"a"' } })
        : problem(401, 'unauthorized'),
    );
    const api = new ApiClient({ fetch: fetchFn, storage });
    let told = 0;
    api.onUnauthorized(() => (told += 1));
    api.signIn('pos_k');
    await api.get('/x');
    expect(api.cache.size).toBe(1);
    status = 401;
    await expect(api.get('/x')).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    expect(told).toBe(1);
    expect(api.apiKey).toBeNull();
    expect(api.cache.size).toBe(0);
  });

  it('checks a key before keeping it, without signing anyone out on a 401', async () => {
    const storage = memoryStorage();
    const { calls, fetchFn } = recording(() => problem(401, 'unauthorized'));
    const api = new ApiClient({ fetch: fetchFn, storage });
    let told = 0;
    api.onUnauthorized(() => (told += 1));
    await expect(api.verifyKey('pos_wrong')).rejects.toBeInstanceOf(ApiError);
    expect(headersOf(calls[0])['X-API-Key']).toBe('pos_wrong');
    expect(told).toBe(0);
    expect(api.apiKey).toBeNull();
  });

  it('turns problem answers of actions into ApiError with the per-field errors', async () => {
    const body = {
      status: 400,
      code: 'validation_failed',
      title: 'Validation failed',
      detail: 'bad',
      errors: [{ field: '/from', message: 'required' }],
    };
    const { calls, fetchFn } = recording(() => new Response(JSON.stringify(body), { status: 400 }));
    const api = new ApiClient({ fetch: fetchFn, storage: memoryStorage() });
    api.signIn('pos_k');
    const error = await api.post('/schedules/a/backfill', { to: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).errors).toEqual([{ field: '/from', message: 'required' }]);
    expect(calls[0]!.init.method).toBe('POST');
    expect(headersOf(calls[0])['Content-Type']).toBe('application/json');
    expect(calls[0]!.init.body).toBe('{"to":"x"}');
  });

  it('PUTs settings as JSON with the key, and reads the answer', async () => {
    const { calls, fetchFn } = recording(() => Response.json({ name: 'mail', paused: true }));
    const api = new ApiClient({ fetch: fetchFn, storage: memoryStorage() });
    api.signIn('pos_k');
    await expect(api.put('/handlers/mail', { paused: true })).resolves.toEqual({
      name: 'mail',
      paused: true,
    });
    expect(calls[0]!.init.method).toBe('PUT');
    expect(headersOf(calls[0])['X-API-Key']).toBe('pos_k');
    expect(headersOf(calls[0])['Content-Type']).toBe('application/json');
    expect(calls[0]!.init.body).toBe('{"paused":true}');
  });

  it('reads an empty action answer (204) as null', async () => {
    const { fetchFn } = recording(() => new Response(null, { status: 204 }));
    const api = new ApiClient({ fetch: fetchFn, storage: memoryStorage() });
    await expect(api.post('/stages/1/resume', { approved: true })).resolves.toBeNull();
  });

  it('reports an unreachable API as a NetworkError', async () => {
    const api = new ApiClient({
      fetch: () => Promise.reject(new TypeError('fetch failed')),
      storage: memoryStorage(),
    });
    await expect(api.get('/x')).rejects.toBeInstanceOf(NetworkError);
  });
});
