import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor, type Reply } from './support/http.js';
import { ManagedProcess } from './support/processes.js';
import { fileExporterEnv, readSpanFiles, readSpans } from './support/spans.js';

/**
 * A sensitive context value never leaves the places meant for it (decision 0053): planted as a
 * sensitive context item, used by an SDK worker in a stage log line, in a new sensitive context
 * value of its result and in an error message, it appears in no log line of any process, in no
 * API response the client got, and in no exported span. The API key and the worker's session
 * token appear in no log line either.
 */
describe('secrets stay out of logs, responses and spans', () => {
  const secret = `pw-${randomUUID()}`;
  let cluster: Cluster;
  let key: string;
  let spanDir: string;
  const responses: string[] = [];
  const api = async (method: string, path: string, json?: unknown): Promise<Reply> => {
    const reply = await call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });
    responses.push(JSON.stringify(reply.body), JSON.stringify([...reply.headers.entries()]));
    return reply;
  };
  const finished = (id: number) =>
    waitFor(`pipeline ${id} terminal`, async () => {
      const r = await api('GET', `/pipelines/${id}`);
      return r.body.isTerminal ? r.body : undefined;
    }, 30_000);

  beforeAll(async () => {
    spanDir = mkdtempSync(join(tmpdir(), 'po-secret-spans-'));
    // debug level: the most log lines every service can write.
    cluster = await startCluster({ env: { ...fileExporterEnv(spanDir), LOG_LEVEL: 'debug', DISPATCH_SWEEP_INTERVAL_MS: '200' } });
    key = (await cluster.createApp('secrets')).apiKey;
    const worker = new ManagedProcess('secret-worker', 'e2e/support/secret-worker.mjs', {
      ...cluster.env,
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'secret-worker',
      NODE_OPTIONS: '--import @po/telemetry/register',
      OTEL_SERVICE_NAME: 'secret-worker',
    }).start();
    cluster.workers.push(worker);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    if (spanDir) rmSync(spanDir, { recursive: true, force: true });
  });

  it('finds the planted secret in no log line, response or span attribute', async () => {
    const created = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: `secret-${randomUUID()}`,
      name: 'uses a secret',
      pipelineContextItems: [{ key: 'dbPassword', value: secret, isSensitive: true }],
      stages: [
        { stageName: 'connect', stageHandlerName: 'use-secret' },
        { stageName: 'fail', stageHandlerName: 'leak-in-error', options: { runNextIfFailed: true } },
      ],
    });
    expect(created.status).toBe(201);
    const p = await finished(created.body.pipeline.id);
    expect(p.stageStatuses).toEqual(['Completed', 'Failed']);
    // The secret did its work and was redacted where the API shows it.
    const logs = p.stages.flatMap((s: { logs: { message: string }[] }) => s.logs.map((l) => l.message));
    expect(logs).toContain('connecting to the database with password [REDACTED]');
    expect(logs.some((l: string) => l.includes('login failed for password [REDACTED]'))).toBe(true);
    expect(p.pipelineContextItems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: 'dbPassword', value: '[REDACTED]', isSensitive: true }),
        expect.objectContaining({ key: 'sessionToken', value: '[REDACTED]', isSensitive: true }),
      ]),
    );
    await api('GET', '/workers');

    // Let every process export its spans (100 ms batches) and write its last lines.
    const spans = await waitFor('the handler spans', async () => {
      const all = readSpans(spanDir);
      return all.filter((s) => s.name === 'stage.handler').length >= 2 && all.some((s) => s.name === 'stage.apply') ? all : undefined;
    });
    expect(spans.length).toBeGreaterThan(10);
    // Stop every process gracefully: shutdown lines and the last span batches are searched too.
    for (const p of [...cluster.workers, ...cluster.services]) await p.stop();
    const spanText = [...readSpanFiles(spanDir).values()].join('\n');
    const lines = cluster.allLines();
    expect(lines.length).toBeGreaterThan(30);
    expect(lines.some((l) => l.includes('"msg":"request"'))).toBe(true);

    const where = (haystack: string[], needle: string) => haystack.filter((h) => h.includes(needle)).slice(0, 3);
    expect(where(lines, secret), 'log lines').toEqual([]);
    expect(where(responses, secret), 'API responses').toEqual([]);
    expect(where([spanText], secret), 'exported spans').toEqual([]);
    expect(where(spans.map((s) => JSON.stringify(s.attributes)), secret), 'span attributes').toEqual([]);
    // The API key reaches no log line either (it sits in every request's headers).
    expect(where(lines, key), 'API key in logs').toEqual([]);
    expect(where(lines, 'pws_'), 'session tokens in logs').toEqual([]);
  });
});
