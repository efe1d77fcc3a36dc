import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { ManagedProcess } from './support/processes.js';

/** The chart's memory limit of every service (helm values `resources.limits.memory`). */
const CHART_LIMIT_BYTES = 512 * 1024 * 1024;

/** Peak resident memory of a process (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

/**
 * Issue 28, fault 1: a valid creation with 64 context items of 64 KiB and one stage that 99 others
 * depend on. Completing it used to publish 99 messages each carrying the whole 4 MiB context
 * (~420 MiB serialised at once) against pods limited to 512 MiB. The context now goes into one
 * snapshot that the messages name (decision 0121), and every worker still gets it whole.
 */
describe('a large context fanned out to 99 stages', () => {
  let cluster: Cluster;
  let key: string;
  const api = (method: string, path: string, json?: unknown) => call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });

  beforeAll(async () => {
    cluster = await startCluster();
    key = (await cluster.createApp('fan-out')).apiKey;
    const worker = new ManagedProcess('context-size-worker', 'e2e/support/context-size-worker.mjs', {
      ...cluster.env,
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'context-size-worker',
    }).start();
    cluster.workers.push(worker);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('completes all 100 stages, every service under its chart limit, every worker given the whole context', async () => {
    const value = 'c'.repeat(65_536);
    const created = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: `fan-${randomUUID()}`,
      name: 'fan-out',
      pipelineContextItems: Array.from({ length: 64 }, (_, i) => ({ key: `item${i}`, value })),
      stages: [
        { stageName: 'root', stageHandlerName: 'measure', input: 'root' },
        ...Array.from({ length: 99 }, (_, i) => ({ stageName: `leaf${i}`, stageHandlerName: 'measure', input: `leaf${i}`, options: { dependsOn: ['root'] } })),
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.pipeline.id as number;
    const done = await waitFor(
      'the pipeline to finish',
      async () => {
        const r = await api('GET', `/pipelines/${id}`);
        return r.body.isTerminal ? r.body : undefined;
      },
      180_000,
    );
    expect(done.status).toBe('Completed');
    expect(done.stageStatuses).toEqual(Array.from({ length: 100 }, () => 'Completed'));

    for (const service of cluster.services) {
      const peak = peakRss(service.pid!);
      expect(peak, `${service.name} peaked at ${Math.round(peak / 2 ** 20)} MiB`).toBeLessThan(CHART_LIMIT_BYTES);
      console.log(`${service.name}: peak RSS ${Math.round(peak / 2 ** 20)} MiB`);
    }
    // Each stage's output is the context its worker was given: all 64 items, every byte of them.
    const stages = done.stages as { output: string | null }[];
    expect(stages.map((s) => s.output)).toEqual(Array.from({ length: 100 }, () => `64:${64 * 65_536}`));
  }, 240_000);
});
