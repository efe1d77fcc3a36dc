// Decision 0121: a StageNext job whose pipeline context is too large to copy into each message names
// a snapshot; the pulled payload still carries the whole context (addendum §5.1).
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, expectValid } from '@po/testing';
import { pullJobResponseSchema, stageQueueName, type StageNextJob } from '@po/contracts';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';
import { stageNextBullName } from '@po/queues';

describe('a context named by a snapshot (decision 0121)', () => {
  let gw: WorkerGatewayHarness;
  let redis: Redis;
  let worker: { workerId: string; sessionToken: string };
  beforeAll(async () => {
    gw = await startWorkerGateway();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    worker = await gw.bootstrap('snap-1', ['h']);
  });
  afterAll(async () => {
    await redis?.quit();
    await gw?.close();
  });

  const items = [
    { key: 'big', value: 'x'.repeat(40_000), valueType: 'String', isSensitive: false, isDeleted: false },
    { key: 'secret', value: 's3cr3t', valueType: null, isSensitive: true, isDeleted: false },
  ];

  /** A dispatched stage of app A whose queued job names a snapshot written by `owner`. */
  async function dispatchedWithSnapshot(owner: number) {
    const handler = `snap-${randomUUID().slice(0, 8)}`;
    const seeded = await gw.seedDispatched(gw.appA.id, { name: 'snap', stages: [{ stageName: 's0', stageHandlerName: handler }] }, [0]);
    const queue = new Queue(stageNextBullName(stageQueueName(gw.appA.id, handler)), { connection: redis, prefix: gw.prefix });
    const message = seeded.messages[0]!;
    // Replace the seeded job with one whose context is named by a snapshot, as the engine writes it.
    await queue.remove(message.executionId);
    const snapshotId = randomUUID();
    await gw.db.contextSnapshot.create({ data: { id: snapshotId, pipelineId: BigInt(seeded.pipelineId), applicationId: owner, items: JSON.stringify(items), bytes: 40_100 } });
    const job: StageNextJob = { ...message, pipelineContextItems: [], contextSnapshotId: snapshotId };
    await queue.add('stage', job, { jobId: message.executionId });
    await queue.close();
    return { queue: stageQueueName(gw.appA.id, handler), executionId: message.executionId };
  }
  const pull = (queue: string) =>
    gw.call('POST', '/jobs/pull', { json: { queue, lease: { workerId: worker.workerId } }, headers: { 'x-api-key': gw.appA.key, 'x-worker-session': worker.sessionToken } });

  it('the pulled payload carries the snapshot items, and no snapshot id', async () => {
    const d = await dispatchedWithSnapshot(gw.appA.id);
    const r = await pull(d.queue);
    expect(r.status, r.text).toBe(200);
    expectValid(pullJobResponseSchema, r.body);
    expect(r.body.payload.executionId).toBe(d.executionId);
    expect(r.body.payload.pipelineContextItems).toEqual(items);
    expect(r.body.payload).not.toHaveProperty('contextSnapshotId');
    expect(r.body.lease).toMatchObject({ acquired: true });
  });

  it('a snapshot of another application is never read into a payload', async () => {
    const d = await dispatchedWithSnapshot(gw.appB.id);
    const r = await pull(d.queue);
    expect(r.status, r.text).toBe(200);
    expect(r.body.payload.pipelineContextItems).toEqual([]);
    expect(r.text).not.toContain('s3cr3t');
  });
});
