import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { stageNextBullName } from '@po/queues';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';

const LOST_AFTER_SECONDS = 2;

interface ExecutionRow {
  id: string;
  dispatched_at: Date;
  leased_at: Date | null;
  end_reason: string | null;
}

/**
 * Issue 9, durability gaps: a StageNext message that Redis lost after its dispatch committed (the
 * engine publishes before it commits, so a committed execution had its message). Nobody can ever
 * lease it; the sweeper must notice that its job is gone (DISPATCH_LOST_MESSAGE_AFTER_SECONDS after
 * the dispatch) and publish it again.
 */
describe('a StageNext job deleted from Redis after its publication was confirmed', () => {
  let cluster: Cluster;
  let app: { applicationId: number; apiKey: string };
  const api = (method: string, path: string, json?: unknown) => call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': app.apiKey } });
  const executionsOf = (stageId: number) =>
    cluster.database.db.$queryRaw<ExecutionRow[]>`
      SELECT id::text, dispatched_at, leased_at, end_reason FROM stage_executions WHERE stage_id = ${stageId} ORDER BY dispatched_at`;

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { 'scheduler-service': 0 },
      env: { DISPATCH_LOST_MESSAGE_AFTER_SECONDS: String(LOST_AFTER_SECONDS), DISPATCH_SWEEP_INTERVAL_MS: '200' },
    });
    app = await cluster.createApp('lost-message');
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('is republished by the sweeper, so the stage still runs once and the pipeline completes', async () => {
    // No worker runs yet: the first stage is dispatched and published, and stays in the queue.
    const created = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: 'lost-1',
      name: 'lost-message',
      stages: [
        { stageName: 'lost', stageHandlerName: 'echo', input: 'found again' },
        { stageName: 'after', stageHandlerName: 'echo', input: 'then this' },
      ],
    });
    expect(created.status).toBe(201);
    const pipelineId = created.body.pipeline.id as number;
    const stageId = created.body.pipeline.stages[0].id as number;
    const execution = await waitFor('the first stage\'s execution to be dispatched', async () => {
      const [row] = await executionsOf(stageId);
      return row;
    });

    // The message vanishes the way a lost one would: its job and its place in the wait list.
    const redis = new Redis(cluster.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const queue = new Queue(stageNextBullName(`app_${app.applicationId}_echo_StageNext`), { connection: redis, prefix: cluster.prefix });
    try {
      expect(await queue.getJob(execution.id), 'the StageNext job (id = executionId) before the deletion').toBeDefined();
      await queue.remove(execution.id);
      expect(await queue.getJob(execution.id)).toBeUndefined();
      expect(await queue.getJobCountByTypes('waiting', 'prioritized')).toBe(0);
    } finally {
      await queue.close();
      redis.disconnect();
    }

    cluster.startWorker('worker', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: app.apiKey,
      PO_INSTANCE_ID: 'lost-message',
      PO_HANDLERS: 'echo',
    });
    const finished = (id: number, timeoutMs: number) =>
      waitFor(`pipeline ${id} terminal`, async () => {
        const r = await api('GET', `/pipelines/${id}`);
        return r.body.isTerminal ? r.body : undefined;
      }, timeoutMs, 250);
    // The worker serves the very queue the message was deleted from: a fresh pipeline goes through.
    const control = await api('POST', '/pipelines/idempotent', {
      idempotencyKey: 'control-1',
      name: 'control',
      stages: [{ stageName: 'control', stageHandlerName: 'echo', input: 'control' }],
    });
    expect((await finished(control.body.pipeline.id, 30_000)).status).toBe('Completed');

    const final = await finished(pipelineId, 15_000).catch(async () => {
      const p = (await api('GET', `/pipelines/${pipelineId}`)).body;
      const rows = await executionsOf(stageId);
      throw new Error(
        `the lost StageNext message was never republished: ${Math.round((Date.now() - execution.dispatched_at.getTime()) / 1000)} s after its dispatch ` +
          `(DISPATCH_LOST_MESSAGE_AFTER_SECONDS=${LOST_AFTER_SECONDS}; a pipeline created later on the same queue completed) ` +
          `pipeline ${pipelineId} is ${p.status} with stage 'lost' ${p.stages[0].status} (attempt ${p.stages[0].attempt}); its executions: ${JSON.stringify(rows)}`,
      );
    });

    expect(final.status).toBe('Completed');
    const [lost, after] = final.stages;
    expect(lost.output).toBe('found again');
    expect(after.output).toBe('then this');
    // the echo handler's log line arrives with its result: one line, one applied result
    expect(lost.logs.filter((l: { message: string }) => l.message.startsWith('echoing'))).toHaveLength(1);
    const rows = await executionsOf(stageId);
    expect(rows.filter((r) => r.end_reason === 'result')).toHaveLength(1);
  }, 60_000);
});
