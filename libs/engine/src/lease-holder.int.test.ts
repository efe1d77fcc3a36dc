// Only the lease holder's result is applied (addendum §12 "Fencing of results", last condition;
// issue 28 item 6): the engine discards a result whose workerId is not the execution's lease owner,
// whatever else it carries, and then applies the holder's.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPipeline } from './steps/create.js';
import { planPipeline } from '@po/domain';
import { createPipelineEventsProducer, createRedis, createStageNextPublisher, type StageResultMessage } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import type { EngineItem, ItemOutcome } from './batch.js';
import { Engine, type EngineDeps } from './engine.js';

let database: TestDatabase;
let deps: EngineDeps;
let engine: Engine;
let applicationId: number;
const prefix = testQueuePrefix('lease-holder');
const redis = createRedis(TEST_REDIS_URL, 'producer');
const HOLDER = 'worker-holder';
const OTHER = 'worker-other';

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'lease-holder' } })).id;
  deps = {
    db: database.db,
    publisher: createStageNextPublisher(redis, prefix),
    events: createPipelineEventsProducer(redis, prefix),
    logger: createLogger({ service: 'engine', destination: new Writable({ write: (_c, _e, done) => done() }) }),
    random: () => 0.5,
    maxActiveStages: 0,
  };
  engine = new Engine(deps);
});

afterAll(async () => {
  await deps.publisher.close();
  await deps.events.close();
  await cleanupRedisPrefix(prefix);
  await redis.quit();
  await database.drop();
});

const db = () => database.db;

/** A two-stage pipeline whose first stage is dispatched and leased by HOLDER (attempt 1). */
async function running(): Promise<{ pipelineId: number; stageId: number; executionId: string }> {
  const planned = planPipeline({ name: 'holder', stages: [{ stageName: 'a', stageHandlerName: 'holder' }, { stageName: 'b', stageHandlerName: 'holder' }] }, { applicationId });
  if (!planned.ok) throw new Error('invalid');
  const pipelineId = await db().$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date()));
  await engine.run([{ kind: 'pass', pipelineId }]);
  const [row] = await db().$queryRaw<{ id: bigint; current_execution_id: string }[]>`
    UPDATE stages SET status = 'Running', attempt = attempt + 1 WHERE pipeline_id = ${BigInt(pipelineId)} AND status = 'Pending'
    RETURNING id, current_execution_id::text AS current_execution_id`;
  await db().$executeRaw`
    UPDATE stage_executions SET attempt = 1, lease_owner = ${HOLDER}, leased_at = now(), lease_expires_at = now() + interval '60 seconds'
    WHERE id = ${row!.current_execution_id}::uuid`;
  return { pipelineId, stageId: Number(row!.id), executionId: row!.current_execution_id };
}

/** A successful result of attempt 1 posted by `workerId`, carrying logs, context and an appended stage. */
function result(s: { pipelineId: number; stageId: number; executionId: string }, workerId: string, output: string): EngineItem {
  const message: StageResultMessage = {
    applicationId,
    stageId: s.stageId,
    pipelineId: s.pipelineId,
    workerId,
    receivedAt: new Date().toISOString(),
    result: {
      stageId: s.stageId,
      executionId: s.executionId,
      attempt: 1,
      isSuccess: true,
      result: output,
      logs: [{ message: `log of ${output}` }],
      contextItems: [{ key: `ctx-${output}`, value: output }],
      appendedStages: [{ stageName: `appended-${output}`, stageHandlerName: 'holder' }],
    },
  };
  return { kind: 'result', pipelineId: s.pipelineId, message };
}

const reason = (o: ItemOutcome | undefined) => (o?.kind === 'result' && !o.decision.applied ? o.decision.reason : undefined);
const applied = (o: ItemOutcome | undefined) => o?.kind === 'result' && o.decision.applied;

async function pipelineState(s: { pipelineId: number; stageId: number; executionId: string }) {
  const pipelineId = BigInt(s.pipelineId);
  return {
    stage: await db().stage.findUniqueOrThrow({ where: { id: BigInt(s.stageId) }, select: { status: true, output: true } }),
    execution: await db().stageExecution.findUniqueOrThrow({ where: { id: s.executionId }, select: { endedAt: true, endReason: true, leaseOwner: true } }),
    logs: (await db().stageLog.findMany({ where: { pipelineId }, orderBy: { id: 'asc' } })).map((l) => l.message),
    context: (await db().contextItem.findMany({ where: { pipelineId }, orderBy: { id: 'asc' } })).map((c) => c.key),
    stages: (await db().stage.findMany({ where: { pipelineId }, orderBy: { position: 'asc' } })).map((st) => [st.name, st.status]),
  };
}

describe('only the lease holder’s result is applied (addendum §12)', () => {
  it('a result of another worker is discarded as not_lease_holder and changes nothing; the holder’s result is applied after it', async () => {
    const s = await running();
    const before = await pipelineState(s);
    const [fenced] = await engine.run([result(s, OTHER, 'by-other')]);
    expect(reason(fenced)).toBe('not_lease_holder');
    expect(await pipelineState(s)).toEqual(before);
    expect(before).toMatchObject({ stage: { status: 'Running', output: null }, execution: { endedAt: null, leaseOwner: HOLDER }, logs: [], context: [] });

    const [ok] = await engine.run([result(s, HOLDER, 'by-holder')]);
    expect(applied(ok)).toBe(true);
    expect(await pipelineState(s)).toMatchObject({
      stage: { status: 'Completed', output: 'by-holder' },
      execution: { endReason: 'result', leaseOwner: HOLDER },
      logs: ['log of by-holder'],
      context: ['ctx-by-holder'],
      stages: [
        ['a', 'Completed'],
        ['b', 'Pending'],
        ['appended-by-holder', 'NotStarted'],
      ],
    });
  });

  it('in one batch, another worker’s result ahead of the holder’s is discarded and the holder’s applied; one behind it meets the applied result', async () => {
    const ahead = await running();
    const behind = await running();
    const outcomes = await engine.run([result(ahead, OTHER, 'other-first'), result(ahead, HOLDER, 'holder-second'), result(behind, HOLDER, 'holder-first'), result(behind, OTHER, 'other-second')]);
    expect(outcomes.map((o) => (applied(o) ? 'applied' : reason(o)))).toEqual(['not_lease_holder', 'applied', 'applied', 'stage_not_running']);
    expect((await pipelineState(ahead)).stage).toEqual({ status: 'Completed', output: 'holder-second' });
    expect((await pipelineState(behind)).stage).toEqual({ status: 'Completed', output: 'holder-first' });
    expect((await pipelineState(ahead)).logs).toEqual(['log of holder-second']);
    expect((await pipelineState(behind)).logs).toEqual(['log of holder-first']);
  });

  it('the holder’s failure is applied and another worker’s success does not override it', async () => {
    const s = await running();
    const failure = result(s, HOLDER, 'failed');
    if (failure.kind === 'result') failure.message.result = { ...failure.message.result, isSuccess: false, errorCode: 'BUSINESS_REJECTED', logs: [], contextItems: [], appendedStages: [] };
    const outcomes = await engine.run([result(s, OTHER, 'success-by-other'), failure]);
    expect(outcomes.map((o) => (applied(o) ? 'applied' : reason(o)))).toEqual(['not_lease_holder', 'applied']);
    expect((await pipelineState(s)).stage).toEqual({ status: 'Failed', output: 'failed' });
  });
});
