// POST /pipelines/bulk-rerun and bulk-cancel, GET /operations/{id}, POST /operations/{id}/cancel
// (issue 32, decision 0133). The runner is pipeline-service's (its own tests); here: the match,
// the dry run, validation, one running operation per kind, and tenancy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkDryRunSchema, operationViewSchema } from '@po/contracts';
import { expectProblem, expectValid } from '@po/testing';
import { startGateway, type Gateway } from '../../testing/harness.js';

let gw: Gateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

async function pipelines(name: string, n: number, key = gw.appA.key): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const r = await gw.call('POST', '/pipelines/idempotent', {
      key,
      json: { idempotencyKey: `${name}-${i}-${Math.random()}`, name: `${name}-${i}`, pipelineKeywords: [{ key: 'batch', value: name }], stages: [{ stageName: 's', stageHandlerName: 'h' }] },
    });
    expect(r.status, r.text).toBe(201);
    ids.push(r.body.pipeline.id);
  }
  return ids;
}
const fail = (ids: number[]) => gw.db.$executeRaw`UPDATE pipelines SET status = 'Failed', finished_at = now() WHERE id = ANY(${ids.map(BigInt)}::bigint[])`;
const bulk = (kind: 'rerun' | 'cancel', json: unknown, key = gw.appA.key) => gw.call('POST', `/pipelines/bulk-${kind}`, { key, json });

describe('bulk operations', () => {
  it('a dry run counts what the real run then matches, and changes nothing', async () => {
    const ids = await pipelines('dry', 5);
    await fail(ids.slice(0, 3));
    const dry = await bulk('rerun', { filter: { status: ['Failed'], name: 'dry-' }, dryRun: true });
    expect(dry.status, dry.text).toBe(200);
    expectValid(bulkDryRunSchema, dry.body);
    expect(dry.body).toEqual({ matched: 3, sample: ids.slice(0, 3) });
    expect(await gw.db.operation.count()).toBe(0);

    const real = await bulk('rerun', { filter: { status: ['Failed'], name: 'dry-' }, maxPerSecond: 5 });
    expect(real.status, real.text).toBe(202);
    expectValid(operationViewSchema, real.body);
    expect(real.body).toMatchObject({ kind: 'rerun', status: 'Running', from: 'failed', maxPerSecond: 5, matched: 3, done: 0, failed: 0, failures: [], finishedAt: null, filter: { status: ['Failed'], name: 'dry-' } });
    const items = await gw.db.operationItem.findMany({ where: { operationId: BigInt(real.body.id) }, orderBy: { pipelineId: 'asc' } });
    expect(items.map((i) => Number(i.pipelineId))).toEqual(ids.slice(0, 3));

    const read = await gw.call('GET', `/operations/${real.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(real.body);
    // One rerun operation at a time; a cancel operation is another kind.
    expectProblem(await bulk('rerun', { filter: { name: 'dry-' } }), 409, 'conflict');
    const cancelOp = await bulk('cancel', { filter: { keyword: ['batch=dry'], status: ['NotStarted', 'Pending', 'Running'] } });
    expect(cancelOp.status, cancelOp.text).toBe(202);
    expect(cancelOp.body).toMatchObject({ kind: 'cancel', from: null, matched: 2, maxPerSecond: 50 });

    // Cancel stops it; a second cancel is a conflict.
    const stopped = await gw.call('POST', `/operations/${real.body.id}/cancel`);
    expect(stopped.status, stopped.text).toBe(200);
    expect(stopped.body).toMatchObject({ status: 'Cancelled', finishedAt: expect.any(String) });
    expectProblem(await gw.call('POST', `/operations/${real.body.id}/cancel`), 409, 'conflict');
    expect((await bulk('rerun', { filter: { name: 'dry-' }, dryRun: true })).status).toBe(200);
    await gw.call('POST', `/operations/${cancelOp.body.id}/cancel`);
  });

  it('refuses an empty filter, bad fields and a bad pace, naming each field', async () => {
    expectProblem(await bulk('rerun', { filter: {} }), 400, 'validation_failed', ['/filter']);
    expectProblem(await bulk('rerun', {}), 400, 'validation_failed', ['/filter']);
    expectProblem(await bulk('rerun', { filter: { status: ['Broken'] } }), 400, 'validation_failed', ['/filter/status']);
    expectProblem(await bulk('cancel', { filter: { createdAfter: 'yesterday' } }), 400, 'validation_failed', ['/filter/createdAfter']);
    expectProblem(await bulk('rerun', { filter: { name: 'x' }, maxPerSecond: 0 }), 400, 'validation_failed', ['/maxPerSecond']);
    expectProblem(await bulk('rerun', { filter: { name: 'x' }, from: 'middle' }), 400, 'validation_failed', ['/from']);
    expectProblem(await bulk('rerun', { filter: { name: 'x', unknown: 1 } }), 400, 'validation_failed', ['/filter/unknown']);
    expectProblem(await gw.call('GET', '/operations/abc'), 400, 'validation_failed', ['id']);
    expectProblem(await gw.call('GET', '/operations/999999'), 404, 'not_found');
    expect(await gw.db.operation.count({ where: { status: 'Running' } })).toBe(0);
  });

  it("matches only the application's own pipelines; another application's key sees nothing of it", async () => {
    const mine = await pipelines('tenant', 2, gw.appA.key);
    const theirs = await pipelines('tenant', 3, gw.appB.key);
    await fail([...mine, ...theirs]);
    const dryB = await bulk('rerun', { filter: { name: 'tenant-' }, dryRun: true }, gw.appB.key);
    expect(dryB.body).toEqual({ matched: 3, sample: theirs });
    const op = await bulk('rerun', { filter: { name: 'tenant-' } }, gw.appA.key);
    expect(op.status, op.text).toBe(202);
    expect(op.body.matched).toBe(2);
    expectProblem(await gw.call('GET', `/operations/${op.body.id}`, { key: gw.appB.key }), 404, 'not_found');
    expectProblem(await gw.call('POST', `/operations/${op.body.id}/cancel`, { key: gw.appB.key }), 404, 'not_found');
    expect((await gw.call('GET', `/operations/${op.body.id}`)).body.status).toBe('Running');
    await gw.call('POST', `/operations/${op.body.id}/cancel`);
  });
});
