// Decision 0098: a pull may acquire the delivered stage's lease, and a result may carry the ack of
// its delivery. Both are optional extensions of api-spec "Worker protocol"; without them every call
// behaves as before (pull-ack.int.test.ts, leases.int.test.ts, results.int.test.ts).
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, expectProblem, expectValid } from '@po/testing';
import { pullJobResponseSchema, stageQueueName, stageResultAcceptedSchema } from '@po/contracts';
import type { StageResultMessage } from '@po/queues';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';
import { openResultsQueues, type ResultsQueues } from '../../testing/results-queues.js';

type Session = { workerId: string; sessionToken: string };

describe('lease on pull and ack with the result (decision 0098)', () => {
  let gw: WorkerGatewayHarness;
  let redis: Redis;
  let results: ResultsQueues;
  let w1: Session;
  let w2: Session;
  beforeAll(async () => {
    gw = await startWorkerGateway();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    results = openResultsQueues(redis, gw.prefix);
    [w1, w2] = await Promise.all([gw.bootstrap('lop-1', ['h']), gw.bootstrap('lop-2', ['h'])]);
  });
  afterAll(async () => {
    await results?.close();
    await redis?.quit();
    await gw?.close();
  });

  /** A stage of app A dispatched on a fresh handler, and that handler's queue. */
  async function dispatched() {
    const handler = `lop-${randomUUID().slice(0, 8)}`;
    const seeded = await gw.seedDispatched(gw.appA.id, { name: 'lop', stages: [{ stageName: 's0', stageHandlerName: handler }] }, [0]);
    return { queue: stageQueueName(gw.appA.id, handler), stageId: seeded.stageIds[0]!, executionId: seeded.executions[0]!.executionId };
  }
  const pull = (json: unknown, session: string | null) =>
    gw.call('POST', '/jobs/pull', {
      json,
      headers: { 'x-api-key': gw.appA.key, ...(session === null ? {} : { 'x-worker-session': session }) },
    });
  const submit = (stageId: number, json: unknown, session = w1.sessionToken) =>
    gw.call('POST', `/stages/${stageId}/result`, { json, headers: { 'x-api-key': gw.appA.key, 'x-worker-session': session } });
  const execution = (executionId: string) => gw.db.stageExecution.findUniqueOrThrow({ where: { id: executionId } });

  it('a pull with lease {workerId} delivers the message with the lease acquired, as lease/acquire would', async () => {
    const d = await dispatched();
    const r = await pull({ queue: d.queue, lease: { workerId: w1.workerId } }, w1.sessionToken);
    expect(r.status, r.text).toBe(200);
    expectValid(pullJobResponseSchema, r.body);
    expect(r.body.payload.executionId).toBe(d.executionId);
    expect(r.body.lease).toEqual({ acquired: true, attempt: 1, leaseExpiresAt: expect.any(String), reason: null });
    expect(await execution(d.executionId)).toMatchObject({ leaseOwner: w1.workerId, attempt: 1 });
    // The stage is Running under w1: another worker's acquisition is refused as lease_held.
    const other = await gw.call('POST', `/stages/${d.stageId}/lease/acquire`, {
      json: { executionId: d.executionId, workerId: w2.workerId },
      headers: { 'x-worker-session': w2.sessionToken },
    });
    expect(other.body).toMatchObject({ acquired: false, reason: 'lease_held' });
  });

  it('a pull without lease has no lease field and leaves the stage unleased', async () => {
    const d = await dispatched();
    const r = await pull({ queue: d.queue }, w1.sessionToken);
    expect(r.status, r.text).toBe(200);
    expect(r.body).not.toHaveProperty('lease');
    expect(await execution(d.executionId)).toMatchObject({ leaseOwner: null });
  });

  it('a pull asking for a lease without X-Worker-Session is 401 before any message is taken', async () => {
    const d = await dispatched();
    expectProblem(await pull({ queue: d.queue, lease: { workerId: w1.workerId } }, null), 401, 'unauthorized');
    const again = await pull({ queue: d.queue }, null);
    expect(again.status).toBe(200);
    expect(again.body.payload.executionId).toBe(d.executionId);
  });

  it('a lease the session cannot take (another worker’s id) is null on the delivery; lease/acquire then answers 401', async () => {
    const d = await dispatched();
    const r = await pull({ queue: d.queue, lease: { workerId: w2.workerId } }, w1.sessionToken);
    expect(r.status, r.text).toBe(200);
    expectValid(pullJobResponseSchema, r.body);
    expect(r.body.lease).toBeNull();
    expect(await execution(d.executionId)).toMatchObject({ leaseOwner: null });
    const own = await gw.call('POST', `/stages/${d.stageId}/lease/acquire`, {
      json: { executionId: d.executionId, workerId: w2.workerId },
      headers: { 'x-worker-session': w1.sessionToken },
    });
    expectProblem(own, 401, 'unauthorized');
  });

  it('a malformed lease is a 400 at /lease/workerId', async () => {
    const d = await dispatched();
    const r = await pull({ queue: d.queue, lease: { workerId: '' } }, w1.sessionToken);
    expectProblem(r, 400, 'validation_failed', ['/lease/workerId']);
  });

  it('a result with ackToken acknowledges the delivery after the 202; the token is gone and the job does not carry it', async () => {
    const d = await dispatched();
    const pulled = await pull({ queue: d.queue, lease: { workerId: w1.workerId } }, w1.sessionToken);
    const token = pulled.body.token as string;
    const r = await submit(d.stageId, { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: token });
    expect(r.status, r.text).toBe(202);
    expectValid(stageResultAcceptedSchema, r.body);
    expect(r.body).toEqual({ accepted: true, stageId: d.stageId, executionId: d.executionId, acked: true });
    expectProblem(await gw.call('POST', '/jobs/ack', { json: { token } }), 404, 'not_found');
    const jobs = (await results.getJobs(['waiting'])).map((j) => j.data as StageResultMessage);
    const job = jobs.find((m) => m.result.executionId === d.executionId);
    expect(job?.result).toEqual({ stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true });
    // Acknowledged, not requeued: the queue has nothing more for a pull.
    expect((await pull({ queue: d.queue }, w1.sessionToken)).status).toBe(204);
  });

  it('an ackToken this process does not hold answers 202 with acked false', async () => {
    const d = await dispatched();
    const r = await submit(d.stageId, { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: 'not-a-held-token' });
    expect(r.status, r.text).toBe(202);
    expect(r.body).toEqual({ accepted: true, stageId: d.stageId, executionId: d.executionId, acked: false });
  });

  it('a refused result acknowledges nothing: the token still acks on its own', async () => {
    const d = await dispatched();
    const pulled = await pull({ queue: d.queue }, w1.sessionToken);
    const token = pulled.body.token as string;
    const r = await submit(d.stageId, { stageId: d.stageId + 1_000_000, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: token });
    expectProblem(r, 400, 'validation_failed', ['/stageId']);
    expect((await gw.call('POST', '/jobs/ack', { json: { token } })).status).toBe(200);
  });

  it('an ackToken longer than 256 characters is a 400 at /ackToken', async () => {
    const d = await dispatched();
    const r = await submit(d.stageId, { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: 'x'.repeat(257) });
    expectProblem(r, 400, 'validation_failed', ['/ackToken']);
  });
});
