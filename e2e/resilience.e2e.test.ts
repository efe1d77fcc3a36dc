import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';

const PIPELINES = 200;
const STAGES = 3;

/**
 * "Killing any one service process mid-run (kill -9) and restarting it loses no stage and applies
 * no result twice", with two dispatcher replicas and two result-consumer replicas throughout.
 */
describe('200 pipelines through kill -9 of every service, with replicated dispatchers and consumers', () => {
  let cluster: Cluster;
  let key: string;

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { 'pipeline-service': 2, 'result-consumer': 2, 'scheduler-service': 0 },
      env: { GATEWAY_VISIBILITY_TIMEOUT: '3', DISPATCH_SWEEP_INTERVAL_MS: '200' },
    });
    key = (await cluster.createApp('resilience')).apiKey;
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `resilient-${i}`,
        PO_HANDLERS: 'echo',
        PO_CONCURRENCY: '8',
      });
    }
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('completes every pipeline, one applied result per stage, one execution per attempt', async () => {
    const stages = Array.from({ length: STAGES }, (_, i) => ({
      stageName: `s${i}`,
      stageHandlerName: 'echo',
      input: `v${i}`,
      // A lease granted while the worker-gateway died may never be known to its worker: the
      // retry after LEASE_EXPIRED is how such a stage still completes.
      options: { maxRetries: 2, retryInterval: 1 },
    }));
    // Creation retries on a lost answer: the idempotency key makes that safe.
    const createOne = async (i: number): Promise<number> =>
      waitFor(`creation ${i}`, async () => {
        const r = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
          json: { idempotencyKey: `res-${i}`, name: `res-${i}`, stages },
          headers: { 'x-api-key': key },
        });
        return r.status === 200 || r.status === 201 ? (r.body.pipeline.id as number) : undefined;
      }, 60_000, 250);

    const ids: number[] = [];
    const creating = (async () => {
      for (let i = 0; i < PIPELINES; i += 1) ids.push(await createOne(i));
    })();
    // Kill -9 each service once while pipelines flow, then restart it on its port.
    for (const label of ['pipeline-service-1', 'result-consumer-1', 'worker-gateway', 'api-gateway', 'pipeline-service-2', 'result-consumer-2']) {
      await sleep(1500);
      const victim = cluster.process(label);
      await victim.kill();
      await sleep(500);
      victim.start();
      await victim.waitReady();
    }
    await creating;

    const finals = await waitFor('every pipeline terminal', async () => {
      const bodies = await Promise.all(ids.map(async (id) => (await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers: { 'x-api-key': key } })).body));
      return bodies.every((b) => b.isTerminal) ? bodies : undefined;
    }, 180_000, 1000);

    expect(new Set(ids).size).toBe(PIPELINES);
    for (const p of finals) {
      expect(p.status, `pipeline ${p.id}`).toBe('Completed');
      p.stages.forEach((s: { output: string; logs: { message: string }[] }, i: number) => {
        expect(s.output).toBe(`v${i}`);
        // the example worker's echo handler logs one line per execution it runs
        expect(s.logs.filter((l) => l.message.startsWith('echo')).length, `stage ${i} of pipeline ${p.id}`).toBe(1);
      });
    }
    // No double dispatch: every execution of a stage was a leased attempt (one per attempt).
    const rows = await cluster.database.db.$queryRaw<{ stage_id: bigint; executions: bigint; attempt: number }[]>`
      SELECT s.id AS stage_id, COUNT(e.id) AS executions, s.attempt FROM stages s
      LEFT JOIN stage_executions e ON e.stage_id = s.id GROUP BY s.id, s.attempt`;
    expect(rows).toHaveLength(PIPELINES * STAGES);
    for (const r of rows) expect(Number(r.executions), `stage ${r.stage_id}`).toBe(r.attempt);
  }, 400_000);
});
