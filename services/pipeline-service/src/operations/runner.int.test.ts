// The bulk operation runner (decision 0133) against a real database: each matched pipeline is
// applied once, whatever the runners do (two at once, one stopped and another taking over), a
// cancel stops it, and the pace holds.
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperation, sqlOf, type OperationKind, type PipelineFilter } from '@po/db';
import { planPipeline } from '@po/domain';
import { insertPipeline } from '@po/engine';
import { createLogger } from '@po/telemetry';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { startOperationRunner } from './runner.js';

let database: TestDatabase;
let applicationId: number;
const logger = createLogger({ service: 'pipeline-service', destination: new Writable({ write: (_c, _e, done) => done() }) });
const passes: number[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'ops' } })).id;
});
afterAll(async () => {
  await database.drop();
});

/** `n` pipelines named `<name>-i` of two stages, the first Completed and the second Failed. */
async function failedPipelines(name: string, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const planned = planPipeline({ name: `${name}-${i}`, stages: [{ stageName: 'a', stageHandlerName: 'h' }, { stageName: 'b', stageHandlerName: 'h' }] }, { applicationId });
    if (!planned.ok) throw new Error('invalid');
    ids.push(await database.db.$transaction((tx) => insertPipeline(tx, planned.pipeline, new Date())));
  }
  await database.db.$executeRaw`UPDATE stages SET status = (CASE position WHEN 0 THEN 'Completed' ELSE 'Failed' END)::"StageStatus" WHERE pipeline_id = ANY(${ids.map(BigInt)}::bigint[])`;
  await database.db.$executeRaw`UPDATE pipelines SET status = 'Failed', finished_at = now() WHERE id = ANY(${ids.map(BigInt)}::bigint[])`;
  return ids;
}

const filter = (namePrefix: string): PipelineFilter => ({
  applicationId,
  statuses: [],
  namePrefix,
  keywords: [],
  scheduleNameKey: null,
  createdAfter: null,
  createdBefore: null,
  stageHandlerName: null,
});

async function operation(kind: OperationKind, namePrefix: string, maxPerSecond: number): Promise<number> {
  const op = await sqlOf(database.db).transaction((tx) =>
    createOperation(tx, { kind, filter: filter(namePrefix), filterJson: { name: namePrefix }, rerunFrom: kind === 'rerun' ? 'failed' : null, maxPerSecond, now: new Date() }),
  );
  if ('running' in op) throw new Error(`operation ${op.running} already runs`);
  return op.id;
}

const runner = (runnerId: string, leaseSeconds = 5) =>
  startOperationRunner({ db: database.db, logger, pass: async (id) => passes.push(id) }, { tickMs: 20, runnerId, leaseSeconds });

const state = async (id: number) => {
  const op = await database.db.operation.findUniqueOrThrow({ where: { id: BigInt(id) } });
  const items = await database.db.operationItem.findMany({ where: { operationId: BigInt(id) }, orderBy: { pipelineId: 'asc' } });
  return { op, items };
};
const until = async (what: string, ok: () => Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await sleep(50);
  }
  throw new Error(`${what}: not after ${ms} ms`);
};
const reruns = async (ids: number[]) =>
  database.db.pipeline.findMany({ where: { rerunOf: { in: ids.map(BigInt) } }, select: { id: true, rerunOf: true } });

describe('the bulk operation runner', () => {
  it('two runners at once rerun each matched pipeline once, from its failure, and the operation Succeeds', async () => {
    const ids = await failedPipelines('two-runners', 12);
    const id = await operation('rerun', 'two-runners', 1000);
    const [a, b] = [runner('a'), runner('b')];
    try {
      await until('the operation to succeed', async () => (await state(id)).op.status === 'Succeeded');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    const { op, items } = await state(id);
    expect(op).toMatchObject({ matched: 12, done: 12, failed: 0 });
    const made = await reruns(ids);
    expect(made).toHaveLength(12);
    expect(new Set(made.map((r) => Number(r.rerunOf)))).toEqual(new Set(ids));
    expect(items.every((i) => i.state === 'done' && made.some((r) => r.id === i.resultPipelineId))).toBe(true);
    // From the failure: the first stage of each rerun is carried over.
    const carried = await database.db.stage.count({ where: { pipelineId: { in: made.map((r) => r.id) }, position: 0, status: 'Completed', carriedOverFrom: { not: null } } });
    expect(carried).toBe(12);
    expect(passes).toEqual(expect.arrayContaining(made.map((r) => Number(r.id))));
  });

  it('a runner stopped mid-operation is followed by another once its lease lapses: nothing doubled, nothing left', async () => {
    const ids = await failedPipelines('take-over', 30);
    const id = await operation('rerun', 'take-over', 50);
    const first = runner('first', 1);
    await until('some items done', async () => (await state(id)).op.done >= 5);
    await first.stop();
    const doneByFirst = (await state(id)).op.done;
    expect(doneByFirst).toBeLessThan(30);
    const second = runner('second', 1);
    try {
      await until('the operation to succeed', async () => (await state(id)).op.status === 'Succeeded');
    } finally {
      await second.stop();
    }
    expect((await state(id)).op).toMatchObject({ matched: 30, done: 30, failed: 0 });
    const made = await reruns(ids);
    expect(made).toHaveLength(30);
    expect(new Set(made.map((r) => Number(r.rerunOf))).size).toBe(30);
  });

  it('holds its pace: 60 items at 20 a second take at least (60 - 20) / 20 s', async () => {
    await failedPipelines('paced', 60);
    const id = await operation('rerun', 'paced', 20);
    const started = Date.now();
    const r = runner('paced');
    try {
      await until('the operation to succeed', async () => (await state(id)).op.status === 'Succeeded', 30_000);
    } finally {
      await r.stop();
    }
    // At most one second's worth at the start, then 20 a second.
    expect(Date.now() - started).toBeGreaterThanOrEqual(((60 - 20) / 20) * 1000);
  });

  it('stops when cancelled: no item is applied after the cancel commits', async () => {
    const ids = await failedPipelines('cancelled', 40);
    const id = await operation('rerun', 'cancelled', 10);
    const r = runner('c');
    try {
      await until('some items done', async () => (await state(id)).op.done >= 2);
      await database.db.$executeRaw`UPDATE operations SET status = 'Cancelled', finished_at = now() WHERE id = ${BigInt(id)}`;
      const atCancel = (await reruns(ids)).length;
      await sleep(800);
      expect((await reruns(ids)).length).toBe(atCancel);
      expect(atCancel).toBeLessThan(40);
      expect((await state(id)).op.status).toBe('Cancelled');
    } finally {
      await r.stop();
    }
  });

  it('counts a pipeline it cannot apply as failed with why, and goes on; a bulk cancel cancels the rest', async () => {
    const ids = await failedPipelines('mixed', 4);
    // One of them is running again (not terminal): it cannot be rerun.
    await database.db.$executeRaw`UPDATE pipelines SET status = 'Running', finished_at = NULL WHERE id = ${BigInt(ids[1]!)}`;
    const rerunOp = await operation('rerun', 'mixed', 1000);
    const r = runner('m');
    try {
      await until('the rerun to succeed', async () => (await state(rerunOp)).op.status === 'Succeeded');
      const { op, items } = await state(rerunOp);
      expect(op).toMatchObject({ matched: 4, done: 3, failed: 1 });
      expect(items.find((i) => Number(i.pipelineId) === ids[1])).toMatchObject({ state: 'failed', reason: expect.stringContaining('Running') });

      const cancelOp = await operation('cancel', 'mixed-1', 1000);
      await until('the cancel to succeed', async () => (await state(cancelOp)).op.status === 'Succeeded');
      expect((await state(cancelOp)).op).toMatchObject({ matched: 1, done: 1, failed: 0 });
      expect((await database.db.pipeline.findUniqueOrThrow({ where: { id: BigInt(ids[1]!) } })).status).toBe('Cancelled');
    } finally {
      await r.stop();
    }
  });
});
