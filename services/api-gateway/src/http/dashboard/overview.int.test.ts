// GET /overview (issue 13, decision 0093): what finished in the last hour by five-minute bucket,
// the live pipelines by status and the depth of the application's StageNext queues, counted over
// known rows and messages; another application's key sees none of it.
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, overviewSchema, stageQueueName, type Overview, type StageNextMessage } from '@po/contracts';
import { createStageNextPublisher, stageNextBullName, type StageNextPublisher } from '@po/queues';
import { expectProblem } from '@po/testing';
import { startGateway, type Gateway } from '../../testing/harness.js';

// 12:02 → the window is [11:05, 12:05): twelve buckets, the last (12:00–12:05) still filling.
const NOW = new Date('2026-03-01T12:02:00.000Z');
const FROM = Date.parse('2026-03-01T11:05:00.000Z');
const at = (minutesAfterFrom: number) => new Date(FROM + minutesAfterFrom * 60_000);

let gw: Gateway;
let publisher: StageNextPublisher;
const shape = compile(overviewSchema, { normalise: false });

async function pipeline(applicationId: number, status: string, finishedAt: Date | null, stages: { handler: string; status: string; finishedAt: Date | null }[]) {
  const [row] = await gw.db.$queryRawUnsafe<{ id: bigint }[]>(
    `INSERT INTO pipelines (application_id, name, trace_id, status, dispatched, finished_at)
     VALUES ($1, 'p', md5(random()::text), $2::"PipelineStatus", true, $3) RETURNING id`,
    applicationId,
    status,
    finishedAt,
  );
  let position = 0;
  for (const s of stages) {
    await gw.db.$executeRawUnsafe(
      `INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, options, span_id, status, finished_at)
       VALUES ($1, $2, $3::int, 's' || $3::int, $4, '{}'::jsonb, '0000000000000001', $5::"StageStatus", $6)`,
      row!.id,
      applicationId,
      position++,
      s.handler,
      s.status,
      s.finishedAt,
    );
  }
}

function message(applicationId: number, handler: string, executionId: string): StageNextMessage {
  return {
    applicationId,
    pipelineId: 1,
    stageId: 1,
    executionId,
    stageName: 's',
    stageHandlerName: handler,
    input: '',
    options: {
      runNextIfFailed: false, retryInterval: 0, maxRetries: 0, timeOut: null, retryOnErrorCodes: [], backoff: 'fixed',
      maxRetryInterval: null, jitter: false, dependsOn: [], runInParallelWith: [], failIfOutputEmpty: false, notifyOnFailure: false, runAsUser: null,
      concurrencyKey: null, concurrencyLimit: null, priority: 3,
    },
    pipelineContextItems: [],
    traceId: '0'.repeat(32),
    spanId: '0'.repeat(16),
    dispatchedAt: NOW.toISOString(),
    timeOutSeconds: null,
    previousAttempts: 0,
  };
}

async function overview(key: string): Promise<Overview> {
  const reply = await gw.call('GET', '/overview', { key });
  expect(reply.status, reply.text).toBe(200);
  const checked = shape(reply.body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  return reply.body as Overview;
}

beforeAll(async () => {
  gw = await startGateway({ clock: () => NOW });
  const A = gw.appA.id;
  const B = gw.appB.id;
  // Application A: in bucket 0 (11:05–11:10) a completed pipeline of two completed stages; in
  // bucket 3 a failed pipeline (one stage completed, one failed); in the current bucket (12:01) one
  // completed stage of a running pipeline. Outside the window (11:04, and 12:05 = `to`) two more.
  await pipeline(A, 'Completed', at(1), [
    { handler: 'resize', status: 'Completed', finishedAt: at(0) },
    { handler: 'upload', status: 'Completed', finishedAt: at(1) },
  ]);
  await pipeline(A, 'Failed', at(16), [
    { handler: 'resize', status: 'Completed', finishedAt: at(15) },
    { handler: 'upload', status: 'Failed', finishedAt: at(16) },
  ]);
  await pipeline(A, 'Running', null, [
    { handler: 'resize', status: 'Completed', finishedAt: at(56) },
    { handler: 'upload', status: 'Pending', finishedAt: null },
  ]);
  await pipeline(A, 'Completed', at(-1), [{ handler: 'resize', status: 'Completed', finishedAt: at(-1) }]);
  await pipeline(A, 'Completed', at(60), [{ handler: 'resize', status: 'Completed', finishedAt: at(60) }]);
  // Cancelled and Skipped are neither completed nor failed.
  await pipeline(A, 'Cancelled', at(20), [{ handler: 'resize', status: 'Cancelled', finishedAt: at(20) }]);
  await pipeline(A, 'Paused', null, [{ handler: 'resize', status: 'WaitingForApproval', finishedAt: null }]);
  await pipeline(A, 'NotStarted', null, [{ handler: 'resize', status: 'NotStarted', finishedAt: null }]);
  // Application B: a handler of its own and a lot that finished in the same buckets.
  for (let i = 0; i < 3; i++) {
    await pipeline(B, 'Failed', at(2), [{ handler: 'b-only', status: 'Failed', finishedAt: at(2) }]);
  }
  await pipeline(B, 'Running', null, [{ handler: 'b-only', status: 'Running', finishedAt: null }]);

  publisher = createStageNextPublisher(gw.redis, gw.prefix);
  const resize = stageQueueName(A, 'resize');
  await publisher.publish(resize, [message(A, 'resize', '00000000-0000-4000-8000-000000000001'), message(A, 'resize', '00000000-0000-4000-8000-000000000002')]);
  await publisher.publish(stageQueueName(B, 'b-only'), [message(B, 'b-only', '00000000-0000-4000-8000-000000000003')]);
  const raw = new Queue(stageNextBullName(stageQueueName(A, 'upload')), { connection: gw.redis, prefix: gw.prefix });
  await raw.add('stage', message(A, 'upload', '00000000-0000-4000-8000-000000000004'), { jobId: '00000000-0000-4000-8000-000000000004', delay: 3_600_000 });
  await raw.close();
});
afterAll(async () => {
  await publisher?.close();
  await gw?.close();
});

describe('GET /overview', () => {
  it('counts what finished in each five-minute bucket of the last hour, oldest first', async () => {
    const o = await overview(gw.appA.key);
    expect(o).toMatchObject({ from: '2026-03-01T11:05:00.000Z', to: '2026-03-01T12:05:00.000Z', bucketSeconds: 300 });
    expect(o.buckets.map((b) => b.start)).toEqual(Array.from({ length: 12 }, (_, i) => new Date(FROM + i * 300_000).toISOString()));
    const nonEmpty = Object.fromEntries(
      o.buckets.flatMap((b, i) => (b.stagesCompleted + b.stagesFailed + b.pipelinesCompleted + b.pipelinesFailed > 0 ? [[i, b]] : [])),
    );
    expect(nonEmpty).toEqual({
      0: { start: '2026-03-01T11:05:00.000Z', stagesCompleted: 2, stagesFailed: 0, pipelinesCompleted: 1, pipelinesFailed: 0 },
      3: { start: '2026-03-01T11:20:00.000Z', stagesCompleted: 1, stagesFailed: 1, pipelinesCompleted: 0, pipelinesFailed: 1 },
      11: { start: '2026-03-01T12:00:00.000Z', stagesCompleted: 1, stagesFailed: 0, pipelinesCompleted: 0, pipelinesFailed: 0 },
    });
  });

  it('counts the pipelines not yet finished by status', async () => {
    expect((await overview(gw.appA.key)).pipelinesByStatus).toEqual({ NotStarted: 1, Pending: 0, Running: 1, Paused: 1 });
  });

  it('reads the depth of each handler queue of the application from the broker', async () => {
    const queues = (await overview(gw.appA.key)).queues;
    expect(queues.map((q) => q.handlerName)).toEqual(['resize', 'upload']);
    const [resize, upload] = queues;
    expect(resize).toMatchObject({ handlerName: 'resize', waiting: 2, delayed: 0 });
    expect(resize!.oldestWaitingAgeMs).toEqual(expect.any(Number));
    expect(resize!.oldestWaitingAgeMs).toBeGreaterThanOrEqual(0);
    expect(upload).toEqual({ handlerName: 'upload', waiting: 0, delayed: 1, oldestWaitingAgeMs: null });
  });

  it("another application's key sees none of it, and only its own", async () => {
    const o = await overview(gw.appB.key);
    expect(o.pipelinesByStatus).toEqual({ NotStarted: 0, Pending: 0, Running: 1, Paused: 0 });
    expect(o.buckets[0]).toMatchObject({ stagesCompleted: 0, stagesFailed: 3, pipelinesCompleted: 0, pipelinesFailed: 3 });
    expect(o.buckets.slice(1).every((b) => b.stagesCompleted + b.stagesFailed + b.pipelinesCompleted + b.pipelinesFailed === 0)).toBe(true);
    expect(o.queues).toEqual([{ handlerName: 'b-only', waiting: 1, delayed: 0, oldestWaitingAgeMs: expect.any(Number) }]);
  });

  it('answers 304 while nothing changed, and the new counts once something finished', async () => {
    // A queue with messages ages every millisecond; application B's queue is drained first.
    const drained = new Queue(stageNextBullName(stageQueueName(gw.appB.id, 'b-only')), { connection: gw.redis, prefix: gw.prefix });
    await drained.obliterate({ force: true });
    await drained.close();
    const first = await gw.call('GET', '/overview', { key: gw.appB.key });
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const again = await gw.call('GET', '/overview', { key: gw.appB.key, headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    await pipeline(gw.appB.id, 'Completed', at(57), []);
    const changed = await gw.call('GET', '/overview', { key: gw.appB.key, headers: { 'if-none-match': etag! } });
    expect(changed.status).toBe(200);
    expect(changed.body.buckets[11].pipelinesCompleted).toBe(1);
  });

  it('needs an API key', async () => {
    expectProblem(await gw.call('GET', '/overview', { key: null }), 401, 'unauthorized');
  });
});
