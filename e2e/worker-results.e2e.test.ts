import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { ManagedProcess } from './support/processes.js';

/**
 * A worker's result may carry a context value over 65536 bytes: that limit is for creation, a
 * result is bounded by its body (issue 10). Before, the gateway refused it with 400, the SDK took
 * the 400 as final, and the handler's result was lost (the stage failed by LEASE_EXPIRED later).
 */
describe('a result with a 100 KB context value', () => {
  let cluster: Cluster;
  let key: string;
  const api = (method: string, path: string, json?: unknown) =>
    call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });

  beforeAll(async () => {
    cluster = await startCluster();
    key = (await cluster.createApp('big-context')).apiKey;
    const worker = new ManagedProcess('big-context-worker', 'e2e/support/big-context-worker.mjs', {
      ...cluster.env,
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'big-context-worker',
    }).start();
    cluster.workers.push(worker);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('is accepted and applied: the stage completes and the pipeline context holds the whole value', async () => {
    const created = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: `big-${randomUUID()}`,
      name: 'big context',
      stages: [{ stageName: 'report', stageHandlerName: 'write-report', input: '100000' }],
    });
    expect(created.status).toBe(201);
    const p = await waitFor(
      'the pipeline to finish',
      async () => {
        const r = await api('GET', `/pipelines/${created.body.pipeline.id}`);
        return r.body.isTerminal ? r.body : undefined;
      },
      30_000,
    );
    expect(p.stageStatuses).toEqual(['Completed']);
    const report = (p.pipelineContextItems as { key: string; value: string }[]).find(
      (c) => c.key === 'report',
    );
    expect(report?.value).toBe('r'.repeat(100_000));
  });
});
