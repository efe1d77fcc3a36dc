// Decision 0100: a result may carry the worker's next pull (no wait), taken once the result is
// accepted and its ackToken acknowledged. An optional extension of api-spec "Worker protocol":
// without `next` the result call answers as before (lease-on-pull.int.test.ts, results tests).
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, expectProblem, expectValid } from '@po/testing';
import { pullJobResponseSchema, stageQueueName, stageResultAcceptedSchema } from '@po/contracts';
import { stageNextBullName, type StageResultMessage } from '@po/queues';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';
import { openResultsQueues, type ResultsQueues } from '../../testing/results-queues.js';

type Session = { workerId: string; sessionToken: string };

describe('the next pull with a result (decision 0100)', () => {
  let gw: WorkerGatewayHarness;
  let redis: Redis;
  let results: ResultsQueues;
  let w1: Session;
  beforeAll(async () => {
    gw = await startWorkerGateway();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    results = openResultsQueues(redis, gw.prefix);
    w1 = await gw.bootstrap('rnp-1', ['h']);
  });
  afterAll(async () => {
    await results?.close();
    await redis?.quit();
    await gw?.close();
  });

  /** `count` stages of app A dispatched on one fresh handler, and that handler's queue. */
  async function dispatched(count: number) {
    const handler = `rnp-${randomUUID().slice(0, 8)}`;
    const stages = Array.from({ length: count }, (_, i) => ({ stageName: `s${i}`, stageHandlerName: handler }));
    const seeded = await gw.seedDispatched(gw.appA.id, { name: 'rnp', stages }, stages.map((_, i) => i));
    return {
      queue: stageQueueName(gw.appA.id, handler),
      stages: seeded.executions.map((e, i) => ({ stageId: seeded.stageIds[i]!, executionId: e.executionId })),
    };
  }
  const headers = () => ({ 'x-api-key': gw.appA.key, 'x-worker-session': w1.sessionToken });
  const pull = (queue: string) => gw.call('POST', '/jobs/pull', { json: { queue, lease: { workerId: w1.workerId } }, headers: headers() });
  const submit = (stageId: number, json: unknown) => gw.call('POST', `/stages/${stageId}/result`, { json, headers: headers() });
  const resultJob = async (executionId: string) =>
    (await results.getJobs(['waiting'])).map((j) => j.data as StageResultMessage).find((m) => m.result.executionId === executionId);

  it('answers 202 with the next delivery of the queue, its lease acquired; the result job carries neither next nor ackToken', async () => {
    const d = await dispatched(2);
    const first = await pull(d.queue);
    expect(first.status, first.text).toBe(200);
    const done = d.stages.find((s) => s.executionId === first.body.payload.executionId)!;
    const other = d.stages.find((s) => s !== done)!;
    const r = await submit(done.stageId, {
      stageId: done.stageId,
      executionId: done.executionId,
      attempt: 1,
      isSuccess: true,
      ackToken: first.body.token,
      next: { queue: d.queue, lease: { workerId: w1.workerId } },
    });
    expect(r.status, r.text).toBe(202);
    expectValid(stageResultAcceptedSchema, r.body);
    expect(r.body).toMatchObject({ accepted: true, stageId: done.stageId, acked: true });
    expectValid(pullJobResponseSchema, r.body.next);
    expect(r.body.next.payload.executionId).toBe(other.executionId);
    expect(r.body.next.lease).toEqual({ acquired: true, attempt: 1, leaseExpiresAt: expect.any(String), reason: null });
    expect(await gw.db.stageExecution.findUniqueOrThrow({ where: { id: other.executionId } })).toMatchObject({ leaseOwner: w1.workerId });
    expect((await resultJob(done.executionId))?.result).toEqual({ stageId: done.stageId, executionId: done.executionId, attempt: 1, isSuccess: true });
    // The delivery it brought is held like a pulled one: its token acks once.
    expect((await gw.call('POST', '/jobs/ack', { json: { token: r.body.next.token } })).status).toBe(200);
  });

  it('on the acknowledged delivery\'s queue, the ack completes the message and takes the next in one broker call (decision 0110); on another queue the pull fetches as usual', async () => {
    const d = await dispatched(3);
    const elsewhere = await dispatched(1);
    const fetch = gw.fetcher.fetch.bind(gw.fetcher);
    let fetches = 0;
    gw.fetcher.fetch = (queue) => {
      fetches += 1;
      return fetch(queue);
    };
    try {
      const first = await pull(d.queue);
      const done = d.stages.find((s) => s.executionId === first.body.payload.executionId)!;
      fetches = 0;
      const r = await submit(done.stageId, { stageId: done.stageId, executionId: done.executionId, attempt: 1, isSuccess: true, ackToken: first.body.token, next: { queue: d.queue, lease: { workerId: w1.workerId } } });
      expect(r.status, r.text).toBe(202);
      expect(r.body).toMatchObject({ acked: true, next: { lease: { acquired: true, attempt: 1 } } });
      expect(fetches).toBe(0);
      const stageNext = new Queue(stageNextBullName(d.queue), { connection: redis, prefix: gw.prefix });
      try {
        // The acknowledged message is gone (completed, removed); the next one is locked by this delivery.
        expect(await stageNext.getJob(done.executionId)).toBeUndefined();
        expect(await stageNext.getJobState(r.body.next.payload.executionId)).toBe('active');
        expect(await stageNext.getJobCountByTypes('waiting', 'prioritized')).toBe(1);
      } finally {
        await stageNext.close();
      }
      // The delivery it took is held like a pulled one, and its result takes the last message the same way.
      const second = d.stages.find((s) => s.executionId === r.body.next.payload.executionId)!;
      const r2 = await submit(second.stageId, { stageId: second.stageId, executionId: second.executionId, attempt: 1, isSuccess: true, ackToken: r.body.next.token, next: { queue: elsewhere.queue } });
      expect(r2.status, r2.text).toBe(202);
      expect(r2.body).toMatchObject({ acked: true, next: { payload: { executionId: elsewhere.stages[0]!.executionId } } });
      expect(fetches).toBe(1);
    } finally {
      gw.fetcher.fetch = fetch;
    }
  });

  it('next is null when the queue is empty, without waiting; the result is accepted all the same', async () => {
    const d = await dispatched(1);
    const first = await pull(d.queue);
    const s = d.stages[0]!;
    const started = Date.now();
    const r = await submit(s.stageId, { stageId: s.stageId, executionId: s.executionId, attempt: 1, isSuccess: true, ackToken: first.body.token, next: { queue: d.queue } });
    expect(r.status, r.text).toBe(202);
    expect(r.body).toEqual({ accepted: true, stageId: s.stageId, executionId: s.executionId, acked: true, next: null });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await resultJob(s.executionId)).toBeDefined();
  });

  it("a next queue outside the application's StageNext queues is a 403 before the result is taken", async () => {
    const d = await dispatched(1);
    const s = d.stages[0]!;
    const foreign = stageQueueName(gw.appB.id, 'h');
    const r = await submit(s.stageId, { stageId: s.stageId, executionId: s.executionId, attempt: 1, isSuccess: true, next: { queue: foreign } });
    expectProblem(r, 403, 'forbidden');
    expect(await resultJob(s.executionId)).toBeUndefined();
  });

  it('a next without a queue, or with a malformed lease, is a 400 at that field', async () => {
    const d = await dispatched(1);
    const s = d.stages[0]!;
    const base = { stageId: s.stageId, executionId: s.executionId, attempt: 1, isSuccess: true };
    expectProblem(await submit(s.stageId, { ...base, next: {} }), 400, 'validation_failed', ['/next/queue']);
    expectProblem(await submit(s.stageId, { ...base, next: { queue: d.queue, lease: { workerId: '' } } }), 400, 'validation_failed', ['/next/lease/workerId']);
    expect(await resultJob(s.executionId)).toBeUndefined();
  });
});
