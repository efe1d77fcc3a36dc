import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBacklogStats,
  createPipelineEventsProducer,
  createRedis,
  createStageResultsProducer,
  stageResultsQueue,
  type StageResultMessage,
} from '@po/queues';
import { metricsText, observeInternalQueues } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, testQueuePrefix } from '@po/testing';

// Issue 30 item 5: the backlog of every queue between the services, with bounded labels. The
// pipeline-service serves the results shards (label shard, 0-7) and pipeline-events by state, read
// from a real Redis that its real producers filled (main.ts wires the same two calls).
const prefix = testQueuePrefix('backlog');
const producerRedis = createRedis(TEST_REDIS_URL, 'producer');
const workerRedis = createRedis(TEST_REDIS_URL, 'worker');
const results = createStageResultsProducer(producerRedis, prefix);
const events = createPipelineEventsProducer(producerRedis, prefix);
const backlog = createBacklogStats(producerRedis, prefix);
const workers: Worker[] = [];

beforeAll(async () => {
  if (producerRedis.status !== 'ready') await once(producerRedis, 'ready');
  observeInternalQueues(() => backlog.read());
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  await Promise.all([backlog.close(), results.close(), events.close()]);
  await cleanupRedisPrefix(prefix);
  await Promise.all([producerRedis.quit(), workerRedis.quit()]);
});

function result(applicationId: number): StageResultMessage {
  return {
    applicationId,
    stageId: 1,
    workerId: `w-${randomUUID()}`,
    receivedAt: new Date().toISOString(),
    result: { stageId: 1, executionId: randomUUID(), attempt: 1 },
  };
}

/** Takes one job of `queue` as a consumer would, leaving it active (not processed). */
async function takeOne(queue: string): Promise<void> {
  const worker = new Worker(queue, null, { connection: workerRedis, prefix, autorun: false });
  workers.push(worker);
  expect(await worker.getNextJob(randomUUID())).toBeDefined();
}

const gauge = (body: string, line: RegExp) => Number(body.match(line)?.[1]);

describe('backlog of the results shards and pipeline-events', () => {
  it('reads nothing but zeros from empty queues: every shard 0-7 and pipeline-events, each by state', async () => {
    const sample = await backlog.read();
    expect(sample.resultShards.map((s) => s.shard)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (const s of sample.resultShards) expect(s).toMatchObject({ waiting: 0, active: 0, delayed: 0 });
    expect(sample.pipelineEvents).toEqual({ waiting: 0, active: 0, delayed: 0 });
  });

  it('counts each result in the shard of its application, one taken by a consumer as active, and events waiting and delayed', async () => {
    // Applications 3 and 11 share shard 3 (11 % 8); application 5 has shard 5.
    for (const applicationId of [3, 11, 3, 5]) await results.publish(result(applicationId));
    await takeOne(stageResultsQueue(3));
    await events.publishMany([
      { type: 'pipeline.created', applicationId: 1, pipelineId: 1 },
      { type: 'pipeline.created', applicationId: 1, pipelineId: 2 },
    ]);
    await events.publishDelayed({ type: 'pipeline.wake', applicationId: 1, pipelineId: 3 }, 60_000);

    const sample = await backlog.read();
    const shard = (k: number) => sample.resultShards.find((s) => s.shard === k);
    expect(shard(3)).toEqual({ shard: 3, waiting: 2, active: 1, delayed: 0 });
    expect(shard(5)).toEqual({ shard: 5, waiting: 1, active: 0, delayed: 0 });
    for (const k of [0, 1, 2, 4, 6, 7]) expect(shard(k)).toEqual({ shard: k, waiting: 0, active: 0, delayed: 0 });
    expect(sample.pipelineEvents).toEqual({ waiting: 2, active: 0, delayed: 1 });
  });

  it('serves them on GET /metrics with shard and state labels only: 24 results series and 3 event series', async () => {
    const { body } = await metricsText();
    expect(gauge(body, /^po_stage_results_queue_jobs\{shard="3",state="waiting"\} (\d+)$/m)).toBe(2);
    expect(gauge(body, /^po_stage_results_queue_jobs\{shard="3",state="active"\} (\d+)$/m)).toBe(1);
    expect(gauge(body, /^po_stage_results_queue_jobs\{shard="5",state="waiting"\} (\d+)$/m)).toBe(1);
    expect(gauge(body, /^po_pipeline_events_queue_jobs\{state="waiting"\} (\d+)$/m)).toBe(2);
    expect(gauge(body, /^po_pipeline_events_queue_jobs\{state="delayed"\} (\d+)$/m)).toBe(1);
    expect(body.match(/^po_stage_results_queue_jobs\{/gm)).toHaveLength(24);
    expect(body.match(/^po_pipeline_events_queue_jobs\{/gm)).toHaveLength(3);
    expect(body).toContain('po_metrics_collect_errors_total{collector="internal_queues"} 0');
  });
});
