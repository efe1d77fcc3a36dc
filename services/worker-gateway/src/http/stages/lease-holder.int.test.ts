// Only the lease holder's result is applied (addendum §12 "Fencing of results", last condition;
// issue 28 item 6): a result posted with a session of another worker of the same application gets
// the 202 of any well-formed result of the application's stage, and is discarded. Here the gateway
// serves lease and result and the real engine applies the results as result-consumer does.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageQueueName } from '@po/contracts';
import { Engine } from '@po/engine';
import { createPipelineEventsProducer, createRedis, createStageNextPublisher, createStageResultsConsumer } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';

type Session = { workerId: string; sessionToken: string };

let gw: WorkerGatewayHarness;
const producerRedis = createRedis(TEST_REDIS_URL, 'producer');
const consumerRedis = createRedis(TEST_REDIS_URL, 'worker');
let closeEngine: () => Promise<void>;
/** Results wait here before they are applied: a result-consumer with a backlog. */
let backlog: Promise<void> = Promise.resolve();
function holdResults(): () => void {
  let release!: () => void;
  backlog = new Promise((resolve) => (release = resolve));
  return release;
}

beforeAll(async () => {
  gw = await startWorkerGateway();
  const publisher = createStageNextPublisher(producerRedis, gw.prefix);
  const events = createPipelineEventsProducer(producerRedis, gw.prefix);
  const logger = createLogger({ service: 'engine', destination: new Writable({ write: (_c, _e, done) => done() }) });
  const engine = new Engine({ db: gw.db, publisher, events, logger, random: () => 0.5, maxActiveStages: 0 });
  const consumers = createStageResultsConsumer(consumerRedis, gw.prefix, async (message) => {
    await backlog;
    await engine.run([{ kind: 'result', pipelineId: message.pipelineId ?? 0, message }]);
  });
  closeEngine = async () => {
    await Promise.all(consumers.map((c) => c.close()));
    await publisher.close();
    await events.close();
  };
});

afterAll(async () => {
  await closeEngine?.();
  await gw?.close();
  await Promise.all([producerRedis.quit(), consumerRedis.quit()]);
});

async function waitFor<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A two-stage pipeline of app A with its first stage dispatched (Pending, a current execution). */
async function dispatched() {
  const seeded = await gw.seedDispatched(gw.appA.id, { name: 'holder', stages: [{ stageName: 'a', stageHandlerName: 'h' }, { stageName: 'b', stageHandlerName: 'h' }] }, [0]);
  return { pipelineId: seeded.pipelineId, stageId: seeded.stageIds[0]!, executionId: seeded.executions[0]!.executionId };
}

async function acquire(w: Session, d: { stageId: number; executionId: string }): Promise<number> {
  const r = await gw.call('POST', `/stages/${d.stageId}/lease/acquire`, {
    json: { executionId: d.executionId, workerId: w.workerId },
    headers: { 'x-worker-session': w.sessionToken },
  });
  expect(r.body, r.text).toMatchObject({ acquired: true });
  return r.body.attempt as number;
}

async function post(w: Session, d: { stageId: number; executionId: string }, attempt: number, output: string) {
  const r = await gw.call('POST', `/stages/${d.stageId}/result`, {
    json: {
      stageId: d.stageId,
      executionId: d.executionId,
      attempt,
      isSuccess: true,
      result: output,
      logs: [{ message: `log of ${output}` }],
      contextItems: [{ key: `ctx-${output}`, value: output }],
      appendedStages: [{ stageName: `appended-by-${output}`, stageHandlerName: 'h' }],
    },
    headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken },
  });
  expect(r.status, r.text).toBe(202);
  expect(r.body).toEqual({ accepted: true, stageId: d.stageId, executionId: d.executionId });
}

const stage = (id: number) => gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(id) } });
const completed = (id: number) => waitFor(`stage ${id} Completed`, async () => {
  const s = await stage(id);
  return s.status === 'Completed' ? s : undefined;
});

describe('only the lease holder’s result is applied (addendum §12)', () => {
  it('a result posted first by another worker of the same application is discarded; the holder’s, posted after it, is applied with its output', async () => {
    const [holder, other] = await Promise.all([gw.bootstrap('holder-1', ['h']), gw.bootstrap('other-1', ['h'])]);
    expect(other.workerId).not.toBe(holder.workerId);
    const d = await dispatched();
    const attempt = await acquire(holder, d);

    // Both results are posted while the consumer has a backlog, so both would be waiting together.
    const release = holdResults();
    await post(other, d, attempt, 'by-other');
    await post(holder, d, attempt, 'by-holder');
    release();
    expect(await completed(d.stageId)).toMatchObject({ status: 'Completed', output: 'by-holder' });
    const pipelineId = BigInt(d.pipelineId);
    // Nothing of the other worker's result reached the pipeline: logs, context, appended stages.
    const logs = await gw.db.stageLog.findMany({ where: { pipelineId }, select: { message: true } });
    expect(logs.map((l) => l.message)).toEqual(['log of by-holder']);
    const context = await gw.db.contextItem.findMany({ where: { pipelineId }, select: { key: true } });
    expect(context.map((c) => c.key)).toEqual(['ctx-by-holder']);
    const names = (await gw.db.stage.findMany({ where: { pipelineId }, orderBy: { position: 'asc' } })).map((s) => s.name);
    expect(names).toEqual(['a', 'b', 'appended-by-by-holder']);
    // The execution ended by the holder's result, and it still names the holder.
    expect(await gw.db.stageExecution.findUniqueOrThrow({ where: { id: d.executionId } })).toMatchObject({ leaseOwner: holder.workerId, endReason: 'result' });
  });

  it('a result another worker posted before anyone leased the execution does not take the holder’s job: the holder’s, posted after, is applied', async () => {
    const [holder, other] = await Promise.all([gw.bootstrap('holder-5', ['h']), gw.bootstrap('other-5', ['h'])]);
    const d = await dispatched();
    const release = holdResults();
    // Not leased yet, so the gateway cannot tell it apart and publishes it (the engine discards it).
    await post(other, d, 1, 'by-other');
    expect(await acquire(holder, d)).toBe(1);
    await post(holder, d, 1, 'by-holder');
    release();
    expect(await completed(d.stageId)).toMatchObject({ output: 'by-holder' });
  });

  it('another worker holding a redelivery of the execution, its session cached, posts with its ackToken: discarded; the holder’s result is applied', async () => {
    const [holder, other] = await Promise.all([gw.bootstrap('holder-4', ['h']), gw.bootstrap('other-4', ['h'])]);
    // The other worker's session is now one this process saw live (decision 0099).
    const warm = await dispatched();
    await post(other, warm, 1, 'warm-up');

    const handler = `lh-${randomUUID().slice(0, 8)}`;
    const queue = stageQueueName(gw.appA.id, handler);
    const seeded = await gw.seedDispatched(gw.appA.id, { name: 'redelivered', stages: [{ stageName: 'a', stageHandlerName: handler }] }, [0]);
    const d = { pipelineId: seeded.pipelineId, stageId: seeded.stageIds[0]!, executionId: seeded.executions[0]!.executionId };
    const pull = (w: Session) =>
      gw.call('POST', '/jobs/pull', { json: { queue, lease: { workerId: w.workerId } }, headers: { 'x-api-key': gw.appA.key, 'x-worker-session': w.sessionToken } });
    const first = await pull(holder);
    expect(first.body?.lease, first.text).toMatchObject({ acquired: true, attempt: 1 });
    // The holder puts the message back (requeue=true keeps its lease), and the other worker gets it.
    expect((await gw.call('POST', '/jobs/ack', { json: { token: first.body.token, requeue: true } })).status).toBe(200);
    const second = await pull(other);
    expect(second.body?.payload?.executionId, second.text).toBe(d.executionId);
    expect(second.body.lease).toMatchObject({ acquired: false, reason: 'lease_held' });

    const release = holdResults();
    const r = await gw.call('POST', `/stages/${d.stageId}/result`, {
      json: { stageId: d.stageId, executionId: d.executionId, attempt: 1, isSuccess: true, result: 'by-other', ackToken: second.body.token },
      headers: { 'x-api-key': gw.appA.key, 'x-worker-session': other.sessionToken },
    });
    expect(r.status, r.text).toBe(202);
    expect(r.body).toMatchObject({ accepted: true, acked: true });
    await post(holder, d, 1, 'by-holder');
    release();
    expect(await completed(d.stageId)).toMatchObject({ output: 'by-holder' });
  });

  it('the holder’s result is applied when it posts with a new session of the same worker (a re-bootstrap keeps the workerId)', async () => {
    const first = await gw.bootstrap('holder-3', ['h']);
    const d = await dispatched();
    const attempt = await acquire(first, d);
    const again = await gw.bootstrap('holder-3', ['h']);
    expect(again.workerId).toBe(first.workerId);
    expect(again.sessionToken).not.toBe(first.sessionToken);
    await post(again, d, attempt, 'after-rebootstrap');
    expect(await completed(d.stageId)).toMatchObject({ output: 'after-rebootstrap' });
  });
});
