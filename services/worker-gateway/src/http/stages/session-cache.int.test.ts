// Decision 0099: a result whose session this process saw live within seconds is not read again,
// and its stage's owner comes from the delivery its ackToken names. The answers stay those of
// api-spec "Worker protocol" and addendum §3/§15: a superseded or revoked session is refused as
// soon as its change is announced, another application's stage is still 403, a missing one 404.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, expectProblem } from '@po/testing';
import { stageQueueName } from '@po/contracts';
import type { StageResultMessage } from '@po/queues';
import { startWorkerGateway, type Reply, type WorkerGatewayHarness } from '../../testing/harness.js';
import { openResultsQueues, type ResultsQueues } from '../../testing/results-queues.js';

let gw: WorkerGatewayHarness;
let redis: Redis;
let results: ResultsQueues;
beforeAll(async () => {
  gw = await startWorkerGateway();
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  results = openResultsQueues(redis, gw.prefix);
});
afterAll(async () => {
  await results?.close();
  await redis?.quit();
  await gw?.close();
});

type Session = { workerId: string; sessionToken: string };

/** A stage of `applicationId` dispatched on a fresh handler, pulled with its lease by `w` (app A only). */
async function delivered(w: Session) {
  const handler = `sc-${randomUUID().slice(0, 8)}`;
  const seeded = await gw.seedDispatched(gw.appA.id, { name: 'sc', stages: [{ stageName: 's0', stageHandlerName: handler }] }, [0]);
  const pulled = await gw.call('POST', '/jobs/pull', {
    json: { queue: stageQueueName(gw.appA.id, handler), lease: { workerId: w.workerId } },
    headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken },
  });
  expect(pulled.body?.lease?.acquired, pulled.text).toBe(true);
  return { pipelineId: seeded.pipelineId, stageId: seeded.stageIds[0]!, executionId: seeded.executions[0]!.executionId, token: pulled.body.token as string };
}

const submit = (w: Session, stageId: number, json: Record<string, unknown>): Promise<Reply> =>
  gw.call('POST', `/stages/${stageId}/result`, { json, headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken } });

/** Repeats `call` until it answers `status` (a change is announced asynchronously), for at most 3 s. */
async function eventually(call: () => Promise<Reply>, status: number): Promise<Reply> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const reply = await call();
    if (reply.status === status || Date.now() > deadline) return reply;
    await sleep(20);
  }
}

describe('results of a cached session (decision 0099)', () => {
  it('a second result of a live session is accepted, with the pipeline the delivery names', async () => {
    const w = await gw.bootstrap(`sc-${randomUUID()}`, ['h']);
    for (let i = 0; i < 2; i++) {
      const d = await delivered(w);
      const r = await submit(w, d.stageId, { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: d.token });
      expect(r.status, r.text).toBe(202);
      expect(r.body.acked).toBe(true);
      const job = (await results.getJobs(['waiting'])).map((j) => j.data as StageResultMessage).find((m) => m.result.executionId === d.executionId);
      expect(job).toMatchObject({ applicationId: gw.appA.id, stageId: d.stageId, pipelineId: d.pipelineId, workerId: w.workerId });
    }
  });

  it('an ackToken of another stage’s delivery does not vouch for the stage: a missing stage is 404, another application’s 403', async () => {
    const w = await gw.bootstrap(`sc-${randomUUID()}`, ['h']);
    const warm = await delivered(w);
    expect((await submit(w, warm.stageId, { stageId: warm.stageId, executionId: warm.executionId, attempt: 1, isSuccess: true })).status).toBe(202);
    const d = await delivered(w);
    const missing = 9_000_000_000;
    expectProblem(await submit(w, missing, { stageId: missing, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: d.token }), 404, 'not_found');
    const other = await gw.seedDispatched(gw.appB.id, { name: 'sc-b', stages: [{ stageName: 's0', stageHandlerName: 'h' }] }, [0]);
    const foreign = other.stageIds[0]!;
    expectProblem(await submit(w, foreign, { stageId: foreign, executionId: d.executionId, attempt: 1, isSuccess: true, ackToken: d.token }), 403, 'forbidden');
    // Neither refusal acknowledged the delivery.
    expect((await gw.call('POST', '/jobs/ack', { json: { token: d.token } })).status).toBe(200);
  });

  it('a session superseded by a second bootstrap is refused once announced, though it was cached', async () => {
    const instance = `sc-${randomUUID()}`;
    const w = await gw.bootstrap(instance, ['h']);
    const d = await delivered(w);
    expect((await submit(w, d.stageId, { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true })).status).toBe(202);
    await gw.bootstrap(instance, ['h']);
    const r = await eventually(() => submit(w, d.stageId, { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true }), 401);
    expectProblem(r, 401, 'unauthorized');
    expect(r.body.detail).toBe('Invalid or superseded worker session.');
  });

});

describe('a cached session past its expiry (decision 0099)', () => {
  let short: WorkerGatewayHarness;
  beforeAll(async () => {
    short = await startWorkerGateway({ WORKER_SESSION_TTL: '2' });
  });
  afterAll(async () => {
    await short?.close();
  });

  it('is refused as expired by the check on every use, with no announcement', async () => {
    const w = await short.bootstrap(`sc-${randomUUID()}`, ['h']);
    const seeded = await short.seedDispatched(short.appA.id, { name: 'sc', stages: [{ stageName: 's0', stageHandlerName: 'h' }] }, [0]);
    const [stageId, executionId] = [seeded.stageIds[0]!, seeded.executions[0]!.executionId];
    const post = () =>
      short.call('POST', `/stages/${stageId}/result`, {
        json: { stageId, executionId, attempt: 1, isSuccess: true },
        headers: { 'x-api-key': short.appA.key, 'x-worker-session': w.sessionToken },
      });
    expect((await post()).status).toBe(202);
    const expiresAt = (await short.db.workerSession.findFirstOrThrow({ where: { workerId: w.workerId, supersededAt: null } })).expiresAt;
    await sleep(Math.max(0, expiresAt.getTime() - Date.now()) + 50);
    const r = await post();
    expectProblem(r, 401, 'unauthorized');
    expect(r.body.detail).toBe('Worker session expired.');
  });
});
