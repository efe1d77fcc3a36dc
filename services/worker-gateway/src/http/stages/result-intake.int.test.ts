// POST /stages/{stageId}/result, issue 10's contract details: the credentials (key, session and
// their application) come first, before the path, the size and the body (addendum §3), and a
// result's context values are bounded by the result body, not by creation's 65536 bytes.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StageResultMessage } from '@po/queues';
import { TEST_REDIS_URL, expectProblem } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';
import { openResultsQueues, type ResultsQueues } from '../../testing/results-queues.js';

type Session = { workerId: string; sessionToken: string };

let gw: WorkerGatewayHarness;
let redis: Redis;
let results: ResultsQueues;
let own: Session;
let foreign: Session;
beforeAll(async () => {
  gw = await startWorkerGateway();
  redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  results = openResultsQueues(redis, gw.prefix);
  [own, foreign] = await Promise.all([
    gw.bootstrap('intake-own', ['h']),
    gw.bootstrap('intake-foreign', ['h'], gw.appB.key),
  ]);
});
afterAll(async () => {
  await results?.close();
  await redis?.quit();
  await gw?.close();
});

async function dispatched() {
  const seeded = await gw.seedDispatched(gw.appA.id, {
    name: 'intake',
    stages: [{ stageName: 's', stageHandlerName: 'h' }],
  });
  return {
    pipelineId: seeded.pipelineId,
    stageId: seeded.stageIds[0]!,
    executionId: seeded.executions[0]!.executionId,
  };
}

/** A result of application A's key, with the given session. */
const submit = (stageId: number | string, body: string, session: Session) =>
  gw.call('POST', `/stages/${stageId}/result`, {
    raw: body,
    headers: { 'x-api-key': gw.appA.key, 'x-worker-session': session.sessionToken },
  });

const published = async (executionId: string): Promise<StageResultMessage[]> =>
  (await results.getJobs(['waiting']))
    .map((j) => j.data as StageResultMessage)
    .filter((m) => m.result.executionId === executionId);

/** A well-formed result body of about `bytes` bytes (the padding is a log line). */
function resultOfSize(d: { stageId: number; executionId: string }, bytes: number): string {
  const raw = JSON.stringify({
    stageId: d.stageId,
    executionId: d.executionId,
    attempt: 1,
    isSuccess: true,
    logs: [{ message: 'p'.repeat(bytes) }],
  });
  expect(Buffer.byteLength(raw)).toBeGreaterThan(327_680);
  return raw;
}

describe('result check order: credentials before path, size and body (addendum §3)', () => {
  it('a session of another application than the key with a malformed body: 401, not 400', async () => {
    const d = await dispatched();
    for (const body of [
      '{"stageId":',
      '[1]',
      '{}',
      JSON.stringify({ stageId: d.stageId, executionId: d.executionId, attempt: 0 }),
    ]) {
      expectProblem(await submit(d.stageId, body, foreign), 401, 'unauthorized');
    }
  });

  it('a session of another application than the key with a 340 KB body: 401, not 413', async () => {
    const d = await dispatched();
    expectProblem(await submit(d.stageId, resultOfSize(d, 340_000), foreign), 401, 'unauthorized');
  });

  it('a session of another application than the key with an invalid path stageId: 401, not 400', async () => {
    const d = await dispatched();
    expectProblem(await submit('0', JSON.stringify({ stageId: 0 }), foreign), 401, 'unauthorized');
    expect(await published(d.executionId)).toHaveLength(0);
  });

  it('the own session with a 340 KB body: 413 payload_too_large; with a malformed body: 400', async () => {
    const d = await dispatched();
    expectProblem(await submit(d.stageId, resultOfSize(d, 340_000), own), 413, 'payload_too_large');
    expectProblem(await submit(d.stageId, '{"stageId":', own), 400, 'validation_failed', ['']);
    expect(await published(d.executionId)).toHaveLength(0);
  });
});

describe('context values of a result are bounded by the result body, not by 65536 bytes', () => {
  it('a 100 KB context value is accepted (202) and published whole', async () => {
    const d = await dispatched();
    const value = 'v'.repeat(100_000);
    const body = {
      stageId: d.stageId,
      executionId: d.executionId,
      attempt: 1,
      isSuccess: true,
      contextItems: [{ key: 'report', value }],
    };
    const r = await submit(d.stageId, JSON.stringify(body), own);
    expect(r.status, r.text.slice(0, 500)).toBe(202);
    const [message] = await published(d.executionId);
    expect(message?.result.contextItems?.map((i) => [i.key, i.value])).toEqual([['report', value]]);
  });

  it('a result whose context value takes the body over 327680 bytes gets 413; the 262144-byte result string still 400', async () => {
    const d = await dispatched();
    const over = {
      stageId: d.stageId,
      executionId: d.executionId,
      attempt: 1,
      contextItems: [{ key: 'report', value: 'v'.repeat(330_000) }],
    };
    expectProblem(await submit(d.stageId, JSON.stringify(over), own), 413, 'payload_too_large');
    const bigResult = {
      stageId: d.stageId,
      executionId: d.executionId,
      attempt: 1,
      result: 'r'.repeat(262_145),
    };
    expectProblem(
      await submit(d.stageId, JSON.stringify(bigResult), own),
      400,
      'validation_failed',
      ['/result'],
    );
    expect(await published(d.executionId)).toHaveLength(0);
  });
});
