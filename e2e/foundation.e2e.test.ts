import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { DEFAULT_PORTS, createDemoApp, startStack, type ServiceName, type StartedStack } from '../deploy/local/stack.mjs';

/** A port the OS says is free now, so the e2e run never collides with a developer's `npm run up`. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

describe('the five services as separate processes, driven over HTTP', () => {
  let database: TestDatabase;
  let stack: StartedStack;
  let api: string;
  let key: string;
  let otherKey: string;
  const prefix = testQueuePrefix('e2e');
  const logs: string[] = [];
  const secret = `e2e-secret-${Math.random().toString(36).slice(2)}`;

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { ...process.env, DATABASE_URL: database.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, HOST: '127.0.0.1', LOG_LEVEL: 'info' };
    const ports: Partial<Record<ServiceName, number>> = {};
    for (const name of Object.keys(DEFAULT_PORTS) as ServiceName[]) ports[name] = await freePort();
    stack = await startStack({ env, ports, log: (line) => logs.push(line), color: false });
    api = stack.urls['api-gateway']!;
    key = (await createDemoApp({ name: 'e2e-a', env })).apiKey;
    otherKey = (await createDemoApp({ name: 'e2e-b', env })).apiKey;
  });

  afterAll(async () => {
    await stack?.stop();
    await cleanupRedisPrefix(prefix);
    await database?.drop();
  });

  const call = async (method: string, path: string, body?: unknown, apiKey: string | null = key) => {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type'), body: text ? JSON.parse(text) : null };
  };

  it('every service answers /healthz and /readyz with 200', async () => {
    for (const url of Object.values(stack.urls)) {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    }
  });

  it('creates, reads, appends to and cancels a pipeline; the dispatcher reacts to the creation', async () => {
    const definition = {
      idempotencyKey: 'e2e-1',
      name: 'release',
      stages: [
        { stageName: 'build', stageHandlerName: 'compile', input: '{"ref":"main"}' },
        { stageName: 'test', stageHandlerName: 'pytest', options: { dependsOn: ['build'], maxRetries: 2, retryInterval: 5 } },
      ],
      pipelineContextItems: [{ key: 'token', value: secret, isSensitive: true }],
    };
    const created = await call('POST', '/pipelines/idempotent', definition);
    expect(created.status).toBe(201);
    expect(created.body.created).toBe(true);
    const id: number = created.body.pipeline.id;

    const again = await call('POST', '/pipelines/idempotent', { ...definition, traceId: 'another-trace' });
    expect(again.status).toBe(200);
    expect(again.body.pipeline.id).toBe(id);

    // No worker serves these handlers: the dispatcher makes the first stage Pending and waits.
    await expect.poll(async () => (await call('GET', `/pipelines/${id}`)).body.stageStatuses, { timeout: 10_000 }).toEqual(['Pending', 'NotStarted']);
    const read = await call('GET', `/pipelines/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.status).toBe('Running');
    expect(read.body.pipelineContextItems[0].value).toBe('[REDACTED]');
    expect((await call('GET', `/pipelines/${id}`, undefined, otherKey)).status).toBe(403);

    const appended = await call('POST', `/pipelines/${id}/stages`, { stages: [{ stageName: 'deploy', stageHandlerName: 'helm', input: { env: 'prod' } }] });
    expect(appended.status).toBe(200);
    expect(appended.body.stages[0]).toMatchObject({ name: 'deploy', status: 'NotStarted', input: '{"env":"prod"}' });

    const cancelled = await call('POST', `/pipelines/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('Cancelled');
    expect(cancelled.body.stageStatuses).toEqual(['Cancelled', 'Cancelled', 'Cancelled']);
    const twice = await call('POST', `/pipelines/${id}/cancel`);
    expect(twice.status).toBe(409);
    expect(twice.type).toContain('application/problem+json');

  });

  it('answers malformed input with problems, never a 500', async () => {
    const res = await fetch(`${api}/pipelines/idempotent`, { method: 'POST', headers: { 'x-api-key': key }, body: '{"name":' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect((await call('GET', '/pipelines/not-a-number')).status).toBe(400);
    expect((await call('GET', '/no/such/route')).status).toBe(404);
  });

  it('writes the sensitive context value to no log line of any service', () => {
    expect(logs.length).toBeGreaterThan(10);
    expect(logs.filter((line) => line.includes(secret))).toEqual([]);
  });

  it('the admin command prints one JSON object and exits 0, or a message on stderr and exits 1', async () => {
    const run = promisify(execFile);
    const env = { ...process.env, DATABASE_URL: database.url };
    const ok = await run(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'create', '--name', 'cli'], { env });
    expect(JSON.parse(ok.stdout)).toMatchObject({ name: 'cli', apiKey: expect.stringMatching(/^pos_/) });
    const bad = await run(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'keys', 'disable', '--key-id', '987654'], { env }).catch((e: { code: number; stderr: string; stdout: string }) => e);
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect((bad as { stderr: string }).stderr).toMatch(/does not exist/);
  });

  it('stops every service gracefully on SIGTERM', async () => {
    const exits: string[] = [];
    await stack.stop();
    for (const line of logs) if (line.includes('"msg":"shutting down"')) exits.push(line);
    expect(exits.length).toBe(5);
  });
});
