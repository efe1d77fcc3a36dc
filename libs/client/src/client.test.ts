// The hand-written layer against a stand-in for the server: what it sends, and what it makes of
// the answers. The real server is exercised in e2e/cli.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { createClient } from './client.js';
import { ProblemError } from './errors.js';

interface Seen {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

function server(answer: (req: Seen) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const fetch = async (request: Request) => {
    const req = {
      method: request.method,
      url: new URL(request.url),
      headers: request.headers,
      body: await request.text(),
    };
    seen.push(req);
    return answer(req);
  };
  return { seen, fetch };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });

describe('createClient', () => {
  it('sends the API key as X-API-Key under the base URL, path prefix kept', async () => {
    const s = server(() => json({ id: 7, name: 'n', status: 'Running' }));
    const client = createClient({
      baseUrl: 'http://api.test/po/',
      apiKey: 'pos_secret',
      fetch: s.fetch,
    });
    await client.pipelines.get(7);
    expect(s.seen[0]!.url.href).toBe('http://api.test/po/pipelines/7');
    expect(s.seen[0]!.headers.get('x-api-key')).toBe('pos_secret');
  });

  it('lists pipelines with repeated status and keyword filters, following nextCursor', async () => {
    const s = server((req) =>
      req.url.searchParams.get('cursor') === null
        ? json({ items: [{ id: 2 }], nextCursor: 'next-1' })
        : json({ items: [{ id: 1 }], nextCursor: null }),
    );
    const client = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: s.fetch });
    const ids: number[] = [];
    for await (const p of client.pipelines.list({
      status: ['Failed', 'Cancelled'],
      keyword: ['env=prod', 'urgent'],
      name: 'nightly',
      limit: 1,
    }))
      ids.push(p.id);
    expect(ids).toEqual([2, 1]);
    const first = s.seen[0]!.url.searchParams;
    expect(first.getAll('status')).toEqual(['Failed', 'Cancelled']);
    expect(first.getAll('keyword')).toEqual(['env=prod', 'urgent']);
    expect(first.get('name')).toBe('nightly');
    expect(first.get('limit')).toBe('1');
    expect(s.seen[1]!.url.searchParams.get('cursor')).toBe('next-1');
  });

  it('throws a ProblemError with the code and field errors of a problem answer', async () => {
    const problem = {
      type: 'urn:problem-type:pipeline-orchestration:validation_failed',
      title: 'Validation failed',
      status: 400,
      detail: 'invalid body',
      instance: '/schedules/x',
      code: 'validation_failed',
      traceId: 'abc',
      errors: [{ field: '/kind', message: 'must be equal to one of the allowed values' }],
    };
    const s = server(
      () =>
        new Response(JSON.stringify(problem), {
          status: 400,
          headers: { 'content-type': 'application/problem+json' },
        }),
    );
    const client = createClient({
      baseUrl: 'http://api.test',
      apiKey: 'pos_never_shown',
      fetch: s.fetch,
    });
    const err = await client.schedules
      .upsert('x', { kind: 'Cron', definition: { name: 'n', stages: [] } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProblemError);
    expect(err).toMatchObject({
      status: 400,
      code: 'validation_failed',
      errors: problem.errors,
      traceId: 'abc',
    });
    expect(JSON.stringify({ ...(err as object), message: (err as Error).message })).not.toContain(
      'pos_never_shown',
    );
  });

  it('tells a new schedule (201) from an updated one (200)', async () => {
    let status = 201;
    const s = server(() => json({ name: 'x' }, status));
    const client = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: s.fetch });
    const body = {
      kind: 'Interval' as const,
      intervalSeconds: 60,
      definition: { name: 'n', stages: [{ stageName: 's', stageHandlerName: 'h' }] },
    };
    expect((await client.schedules.upsert('x', body)).created).toBe(true);
    status = 200;
    expect((await client.schedules.upsert('x', body)).created).toBe(false);
    expect(s.seen[0]!.method).toBe('PUT');
    expect(JSON.parse(s.seen[0]!.body)).toEqual(body);
  });

  it('reruns with POST /pipelines/{id}/rerun and does not repeat it on 503', async () => {
    const s = server(
      () =>
        new Response('{"code":"service_unavailable","title":"t","detail":"d"}', {
          status: 503,
          headers: { 'retry-after': '0' },
        }),
    );
    const client = createClient({
      baseUrl: 'http://api.test',
      apiKey: 'k',
      fetch: s.fetch,
      sleep: async () => {},
    });
    await expect(client.pipelines.rerun(5)).rejects.toMatchObject({
      status: 503,
      code: 'service_unavailable',
    });
    expect(s.seen.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(['POST /pipelines/5/rerun']);
  });

  it('retries an idempotent creation on 503, and a schedule name is URL-encoded', async () => {
    let calls = 0;
    const s = server((req) => {
      calls += 1;
      if (req.url.pathname.endsWith('/idempotent') && calls === 1)
        return new Response('', { status: 503, headers: { 'retry-after': '0' } });
      return json({ pipeline: { id: 1 }, created: true, wasExisting: false }, 201);
    });
    const client = createClient({
      baseUrl: 'http://api.test',
      apiKey: 'k',
      fetch: s.fetch,
      sleep: async () => {},
    });
    const out = await client.pipelines.createIdempotent({
      idempotencyKey: 'k1',
      name: 'n',
      stages: [{ stageName: 's', stageHandlerName: 'h' }],
    });
    expect(out.created).toBe(true);
    expect(s.seen).toHaveLength(2);
    await client.schedules.get('nightly build/eu');
    expect(s.seen[2]!.url.pathname).toBe('/schedules/nightly%20build%2Feu');
  });

  it('handlers: lists items, reads and updates one by its encoded name; null clears a limit', async () => {
    const view = { name: 'pay/eu', paused: true, maxConcurrent: null, maxPerSecond: 5 };
    const s = server((req) =>
      req.url.pathname === '/handlers' ? json({ items: [view] }) : json(view),
    );
    const client = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: s.fetch });
    expect(await client.handlers.list()).toEqual([view]);
    expect(await client.handlers.get('pay/eu')).toEqual(view);
    await client.handlers.update('pay/eu', { maxConcurrent: null, maxPerSecond: 5 });
    await client.handlers.pause('pay/eu');
    await client.handlers.resume('pay/eu');
    expect(s.seen.map((r) => `${r.method} ${r.url.pathname}`)).toEqual([
      'GET /handlers',
      'GET /handlers/pay%2Feu',
      'PUT /handlers/pay%2Feu',
      'PUT /handlers/pay%2Feu',
      'PUT /handlers/pay%2Feu',
    ]);
    expect(s.seen.slice(2).map((r) => JSON.parse(r.body))).toEqual([
      { maxConcurrent: null, maxPerSecond: 5 },
      { paused: true },
      { paused: false },
    ]);
  });

  it('legacy creation puts the key in the body, as that contract wants', async () => {
    const s = server(() => json({ id: 1 }));
    const client = createClient({ baseUrl: 'http://api.test', apiKey: 'pos_k', fetch: s.fetch });
    await client.pipelines.create({
      name: 'n',
      stages: [{ stageName: 's', stageHandlerName: 'h' }],
    });
    expect(JSON.parse(s.seen[0]!.body)).toMatchObject({ apiKey: 'pos_k', name: 'n' });
  });
});
