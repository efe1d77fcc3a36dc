// Issue 10, "Abuse and bad input" (decision 0080): bodies read before authentication get only the
// room their fields need and cost no more than their bytes until accepted; a lone surrogate is a
// 400 at its field everywhere; date-times are bounded; a stalled or unreachable database is a 503.
import { GCProfiler } from 'node:v8';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyLimits, limits, type FieldError } from '@po/contracts';
import { API_KEY_CACHE, createApiKeyCache, createDb, sqlOf } from '@po/db';
import { listen } from '@po/http';
import { createLogger } from '@po/telemetry';
import { buildApp } from '../app.js';
import { parseConfig } from '../config.js';
import { startGateway, type Gateway, type Reply } from '../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

function expectProblem(reply: Reply, status: number, code: string, fields?: string[]): void {
  expect(reply.status, reply.text.slice(0, 300)).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ status, code });
  if (fields) expect((reply.body.errors as FieldError[]).map((e) => e.field)).toEqual(fields);
}

const stage = { stageName: 's', stageHandlerName: 'h' };
const definition = (extra: Record<string, unknown> = {}) => ({
  name: 'hardening',
  stages: [stage],
  ...extra,
});
/** A JSON array of `count` zeros: about 2 bytes per element. */
const zeros = (count: number) => `[${'0,'.repeat(count - 1)}0]`;
const TWO_MIB_OF_ZEROS = zeros(1_000_000);

async function waitingStage(): Promise<number> {
  const reply = await gw.call('POST', '/pipelines', {
    key: null,
    json: { apiKey: gw.appA.key, ...definition() },
  });
  const stageId = reply.body.stages[0].id as number;
  await gw.db.stage.update({
    where: { id: BigInt(stageId) },
    data: { status: 'WaitingForApproval' },
  });
  return stageId;
}

/** Bytes allocated on this process's JS heap while `fn` runs (the gateway runs in it too). */
async function allocatedDuring(fn: () => Promise<unknown>): Promise<number> {
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  await fn();
  const after = process.memoryUsage().heapUsed;
  let allocated = 0;
  let from = before;
  for (const gc of profiler.stop().statistics) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - from;
    from = gc.afterGC.heapStatistics.usedHeapSize;
  }
  return allocated + after - from;
}

describe('bodies read before authentication are small and cheap', () => {
  it('POST /logs (anonymous) with a ~2 MiB body of [0,0,…] is a 413 payload_too_large, sized or streamed', async () => {
    expectProblem(
      await gw.call('POST', '/logs', {
        key: null,
        raw: `{"message":"m","keywords":${TWO_MIB_OF_ZEROS}}`,
      }),
      413,
      'payload_too_large',
    );
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 32; i++)
          controller.enqueue(new TextEncoder().encode('0,'.repeat(32_768)));
        controller.close();
      },
    });
    const res = await fetch(`${gw.url}/logs`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { code: string }).code).toBe('payload_too_large');
  });

  it('POST /logs still takes the largest log line the limits allow: a 65536-byte message and 64 keywords of 300 + 300 characters', async () => {
    const wide = '😀'.repeat(limits.keywordKeyChars);
    const body = JSON.stringify({
      message: 'm'.repeat(limits.logMessageBytes),
      logLevel: 'L'.repeat(limits.logLevelChars),
      keywords: Array.from({ length: limits.logKeywords }, () => ({ key: wide, value: wide })),
      created: '2025-03-01T12:00:00.000Z',
    });
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(bodyLimits.log);
    const reply = await gw.call('POST', '/logs', { key: null, raw: body });
    expect(reply.status, reply.text.slice(0, 300)).toBe(200);
    expectProblem(
      await gw.call('POST', '/logs', {
        key: null,
        raw: `{"message":"${'m'.repeat(bodyLimits.log)}"}`,
      }),
      413,
      'payload_too_large',
    );
  });

  it('routes of short bodies (resume, lookup, cancel) answer a ~2 MiB body with 413 once the key is accepted, 401 before', async () => {
    const stageId = await waitingStage();
    const pipelineId = (
      await gw.call('POST', '/pipelines', {
        key: null,
        json: { apiKey: gw.appA.key, ...definition() },
      })
    ).body.id as number;
    const raw = `{"approved":true,"idempotencyKey":"k","pad":${TWO_MIB_OF_ZEROS}}`;
    for (const path of [
      `/stages/${stageId}/resume`,
      '/pipelines/by-idempotency-key',
      `/pipelines/${pipelineId}/cancel`,
    ]) {
      expectProblem(await gw.call('POST', path, { raw, key: null }), 401, 'unauthorized');
      expectProblem(await gw.call('POST', path, { raw }), 413, 'payload_too_large');
    }
    expect((await gw.call('GET', `/pipelines/${pipelineId}`)).body.status).toBe('NotStarted');
  });

  it('legacy POST /pipelines checks the body key before it parses the rest: an unknown key with ~2 MiB of [0,0,…] is a 401 that allocates little', async () => {
    const raw = `{"apiKey":"pos_unknown","name":"n","stages":[],"policies":${TWO_MIB_OF_ZEROS}}`;
    await gw.call('POST', '/pipelines', { key: null, raw });
    let reply: Reply | undefined;
    const allocated = await allocatedDuring(async () => {
      reply = await gw.call('POST', '/pipelines', { key: null, raw });
    });
    expectProblem(reply!, 401, 'unauthorized');
    // Parsing and walking it allocated ~380 MB; the request, its bytes and the 401 need a few.
    expect(allocated).toBeLessThan(64 * 1024 * 1024);
    expectProblem(
      await gw.call('POST', '/pipelines', { key: null, raw: `{"apiKey":${TWO_MIB_OF_ZEROS}}` }),
      400,
      'validation_failed',
      ['/apiKey'],
    );
    expectProblem(
      await gw.call('POST', '/pipelines', { key: null, raw: TWO_MIB_OF_ZEROS }),
      400,
      'validation_failed',
      [''],
    );
    const created = await gw.call('POST', '/pipelines', {
      key: null,
      raw: `{"api\\u004bey":"${gw.appA.key}","name":"escaped key","stages":[{"stageName":"s","stageHandlerName":"h"}]}`,
    });
    expect(created.status, created.text).toBe(200);
  });
});

describe('a lone surrogate is a 400 at its field on every endpoint, never a 500 or silently replaced', () => {
  it.each<[string, () => Promise<Reply>, string]>([
    [
      'legacy creation name',
      () =>
        gw.call('POST', '/pipelines', {
          key: null,
          raw: `{"apiKey":"${gw.appA.key}","name":"a\\ud800","stages":[{"stageName":"s","stageHandlerName":"h"}]}`,
        }),
      '/name',
    ],
    [
      'idempotent creation policies (free-form)',
      () =>
        gw.call('POST', '/pipelines/idempotent', {
          raw: `{"idempotencyKey":"${randomUUID()}","name":"n","stages":[{"stageName":"s","stageHandlerName":"h"}],"policies":[{"p":{"q":"\\udc00"}}]}`,
        }),
      '/policies/0/p/q',
    ],
    [
      'a member name inside policies',
      () =>
        gw.call('POST', '/pipelines/idempotent', {
          raw: `{"idempotencyKey":"${randomUUID()}","name":"n","stages":[{"stageName":"s","stageHandlerName":"h","policies":[{"\\ud800":1}]}]}`,
        }),
      '/stages/0/policies/0',
    ],
    [
      'stage input',
      () =>
        gw.call('POST', '/pipelines/idempotent', {
          raw: `{"idempotencyKey":"${randomUUID()}","name":"n","stages":[{"stageName":"s","stageHandlerName":"h","input":"{\\"x\\":\\"\\ud83d\\"}"}]}`,
        }),
      '/stages/0/input',
    ],
    [
      'POST /logs message',
      () => gw.call('POST', '/logs', { key: null, raw: '{"message":"before \\ud800 after"}' }),
      '/message',
    ],
    [
      'schedule definition policies',
      () =>
        gw.call('PUT', '/schedules/lone', {
          raw: `{"kind":"Interval","intervalSeconds":60,"definition":{"name":"n","stages":[{"stageName":"s","stageHandlerName":"h"}],"policies":[{"a":"\\udfff"}]}}`,
        }),
      '/definition/policies/0/a',
    ],
  ])('%s', async (_what, send, field) => {
    expectProblem(await send(), 400, 'validation_failed', [field]);
  });

  it('resume rejectionReason and append stage input', async () => {
    const stageId = await waitingStage();
    expectProblem(
      await gw.call('POST', `/stages/${stageId}/resume`, {
        raw: '{"approved":false,"rejectionReason":"\\ud800"}',
      }),
      400,
      'validation_failed',
      ['/rejectionReason'],
    );
    const pipelineId = (
      await gw.call('POST', '/pipelines', {
        key: null,
        json: { apiKey: gw.appA.key, ...definition() },
      })
    ).body.id as number;
    expectProblem(
      await gw.call('POST', `/pipelines/${pipelineId}/stages`, {
        raw: '{"stages":[{"stageName":"s","stageHandlerName":"h","input":{"k":["\\udbff"]}}]}',
      }),
      400,
      'validation_failed',
      ['/stages/0/input/k/0'],
    );
  });
});

describe('date-time bounds', () => {
  it('POST /logs with created in year 0 is a 400 at /created; year 1 is stored', async () => {
    const reply = await gw.call('POST', '/logs', {
      key: null,
      json: { message: 'm', created: '0000-01-01T00:00:00Z' },
    });
    expectProblem(reply, 400, 'validation_failed', ['/created']);
    expect(reply.body.errors[0].message).toBe(
      'must be from 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z',
    );
    expect(
      (
        await gw.call('POST', '/logs', {
          key: null,
          json: { message: 'm', created: '0001-01-01T00:00:00Z' },
        })
      ).status,
    ).toBe(200);
  });
});

describe('a slow or unreachable database is a 503 with Retry-After, never a 500', () => {
  it('resume while another connection holds the pipeline row past the 5 s transaction timeout', async () => {
    const stageId = await waitingStage();
    const stage = await gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(stageId) } });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = gw.db.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT id FROM pipelines WHERE id = ${stage.pipelineId} FOR UPDATE`;
        locked();
        await released;
      },
      { timeout: 15_000 },
    );
    await isLocked;
    const resume = gw.call('POST', `/stages/${stageId}/resume`, { json: { approved: true } });
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    release();
    await holder;
    const reply = await resume;
    expectProblem(reply, 503, 'service_unavailable');
    expect(Number(reply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The retry the 503 asks for succeeds: nothing of the first attempt was kept.
    expect(
      (await gw.call('POST', `/stages/${stageId}/resume`, { json: { approved: true } })).status,
    ).toBe(204);
  }, 20_000);

  it('every endpoint of a gateway whose database refuses connections', async () => {
    const db = createDb('postgresql://postgres@127.0.0.1:1/unreachable');
    const keys = createApiKeyCache(sqlOf(db), API_KEY_CACHE);
    const logger = createLogger({ service: 'api-gateway', level: 'silent' });
    const deps = {
      db,
      sql: sqlOf(db),
      keys,
      events: { publish: async () => undefined, close: async () => undefined },
      logger,
      clock: () => new Date(),
      cancelTimeoutSeconds: 1,
    };
    const app = buildApp(deps as never, parseConfig({}), {});
    const server = await listen(app, '127.0.0.1', 0);
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const replies = await Promise.all([
        fetch(`${url}/logs`, { method: 'POST', body: '{"message":"m"}' }),
        fetch(`${url}/pipelines/1`, { headers: { 'x-api-key': 'pos_any' } }),
        fetch(`${url}/pipelines`, {
          method: 'POST',
          body: JSON.stringify({ apiKey: 'pos_any', ...definition() }),
        }),
      ]);
      for (const res of replies) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).not.toBeNull();
        expect(((await res.json()) as { code: string }).code).toBe('service_unavailable');
      }
    } finally {
      await server.close();
      await keys.close();
      await db.$disconnect();
    }
  });
});
