// POST /stages/{stageId}/lease/acquire and /lease/renew (api-spec "Execution lease" table,
// Authentication, Errors; addendum §3, §7, §11, §12 — every row of both tables, first match wins —
// §15, §19.3, §19.7).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, expectValid } from '@po/testing';
import { stageLeaseResponseSchema } from '@po/contracts';
import { sqlOf } from '@po/db';
import { acquireLease, startExecutions, tryAcquireLeases } from '@po/engine';
import { hashSecret } from '@po/http';
import { metricsRegistry } from '@po/telemetry';
import {
  startWorkerGateway,
  type Reply,
  type WorkerGatewayHarness,
} from '../../testing/harness.js';

// ---------------------------------------------------------------------------------------------
// Assertions shared by this file

/** A definitive refusal: 200, acquired=false, attempt and leaseExpiresAt null, the reason set. */
function expectRefusal(reply: Reply, reason: string): void {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expectValid(stageLeaseResponseSchema, reply.body);
  expect(reply.body).toEqual({ acquired: false, attempt: null, leaseExpiresAt: null, reason });
}
/** A grant: 200, acquired=true, reason null; returns leaseExpiresAt in ms. */
function expectGrant(reply: Reply, attempt: number): number {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expectValid(stageLeaseResponseSchema, reply.body);
  expect(reply.body).toEqual({
    acquired: true,
    attempt,
    leaseExpiresAt: expect.any(String),
    reason: null,
  });
  expect(reply.body.leaseExpiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  return Date.parse(reply.body.leaseExpiresAt as string);
}

// ---------------------------------------------------------------------------------------------

let gw: WorkerGatewayHarness;
type Session = { workerId: string; sessionToken: string };
let w1: Session;
let w2: Session;
let wB: Session;
beforeAll(async () => {
  gw = await startWorkerGateway();
  [w1, w2, wB] = await Promise.all([
    gw.bootstrap('lease-w1', ['h']),
    gw.bootstrap('lease-w2', ['h']),
    gw.bootstrap('lease-wB', ['h'], gw.appB.key),
  ]);
});
afterAll(async () => {
  await gw?.close();
});

type Op = 'acquire' | 'renew';
const lease = (
  op: Op,
  stageId: number | string,
  json: unknown,
  token: string | null = w1.sessionToken,
) =>
  gw.call('POST', `/stages/${stageId}/lease/${op}`, {
    json,
    headers: token === null ? {} : { 'x-worker-session': token },
  });
const as = (w: Session, op: Op, stageId: number, executionId: string) =>
  lease(op, stageId, { executionId, workerId: w.workerId }, w.sessionToken);

/** A pipeline of app A (or B) with its first stage dispatched: Pending with a current execution. */
async function dispatched(applicationId = gw.appA.id, extraStages = 0) {
  const stages = Array.from({ length: 1 + extraStages }, (_, i) => ({
    stageName: `s${i}`,
    stageHandlerName: 'h',
  }));
  const seeded = await gw.seedDispatched(applicationId, { name: 'lease', stages }, [0]);
  return {
    pipelineId: seeded.pipelineId,
    stageId: seeded.stageIds[0]!,
    executionId: seeded.executions[0]!.executionId,
    otherStageIds: seeded.stageIds.slice(1),
  };
}
/** A dispatched stage leased by w1 (attempt 1). */
async function leased() {
  const d = await dispatched();
  expectGrant(await as(w1, 'acquire', d.stageId, d.executionId), 1);
  return d;
}
const stageRow = (id: number) => gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(id) } });
const executionRow = (id: string) => gw.db.stageExecution.findUniqueOrThrow({ where: { id } });
const setStage = (id: number, data: Parameters<typeof gw.db.stage.update>[0]['data']) =>
  gw.db.stage.update({ where: { id: BigInt(id) }, data });
const setExecution = (
  id: string,
  data: Parameters<typeof gw.db.stageExecution.update>[0]['data'],
) => gw.db.stageExecution.update({ where: { id }, data });
const setPipeline = (id: number, data: Parameters<typeof gw.db.pipeline.update>[0]['data']) =>
  gw.db.pipeline.update({ where: { id: BigInt(id) }, data });
/** Redispatch as the dispatcher would after a retry: a new current execution, stage Pending. */
async function redispatch(stageId: number): Promise<string> {
  const executionId = randomUUID();
  await gw.db.$transaction((tx) =>
    startExecutions(tx, gw.appA.id, [{ stageId, executionId }], new Date()),
  );
  return executionId;
}

describe('lease acquire (addendum §12 Acquire table)', () => {
  it('row 6: a Pending stage with its current execution is granted: attempt 1, leaseExpiresAt = now + 60 s, reason null; the stage becomes Running with startedAt and attempt 1', async () => {
    const d = await dispatched();
    const before = Date.now();
    const r = await as(w1, 'acquire', d.stageId, d.executionId);
    const after = Date.now();
    const expires = expectGrant(r, 1);
    expect(expires).toBeGreaterThanOrEqual(before + 60_000);
    expect(expires).toBeLessThanOrEqual(after + 60_000);
    const stage = await stageRow(d.stageId);
    expect(stage).toMatchObject({
      status: 'Running',
      attempt: 1,
      currentExecutionId: d.executionId,
    });
    expect(stage.startedAt!.getTime()).toBeGreaterThanOrEqual(before - 1);
    expect(stage.startedAt!.getTime()).toBeLessThanOrEqual(after + 1);
    const execution = await executionRow(d.executionId);
    expect(execution).toMatchObject({ attempt: 1, leaseOwner: w1.workerId, endedAt: null });
    expect(execution.leaseExpiresAt!.getTime()).toBe(expires);
  });

  it('row 6: attempt = stage attempt + 1 on a later dispatch, and startedAt keeps the first lease grant', async () => {
    const d = await leased();
    const firstStart = (await stageRow(d.stageId)).startedAt!;
    // The first attempt failed and was retried: execution ended, new execution dispatched.
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'LEASE_EXPIRED' });
    const next = await redispatch(d.stageId);
    await sleep(5);
    expectGrant(await as(w2, 'acquire', d.stageId, next), 2);
    const stage = await stageRow(d.stageId);
    expect(stage).toMatchObject({ status: 'Running', attempt: 2 });
    expect(stage.startedAt!.getTime()).toBe(firstStart.getTime());
    expect(await executionRow(next)).toMatchObject({ attempt: 2, leaseOwner: w2.workerId });
  });

  it('row 4: a second acquire by the same caller gets lease_held; by another worker too', async () => {
    const d = await leased();
    const before = await executionRow(d.executionId);
    expectRefusal(await as(w1, 'acquire', d.stageId, d.executionId), 'lease_held');
    expectRefusal(await as(w2, 'acquire', d.stageId, d.executionId), 'lease_held');
    const after = await executionRow(d.executionId);
    expect(after).toMatchObject({ attempt: 1, leaseOwner: w1.workerId });
    expect(after.leaseExpiresAt!.getTime()).toBe(before.leaseExpiresAt!.getTime());
    expect((await stageRow(d.stageId)).attempt).toBe(1);
  });

  it('row 3: an unknown executionId gets stale_execution (a UUID, a non-UUID, or the execution of another stage)', async () => {
    const d = await dispatched(gw.appA.id, 1);
    const other = await dispatched();
    expectRefusal(await as(w1, 'acquire', d.stageId, randomUUID()), 'stale_execution');
    expectRefusal(await as(w1, 'acquire', d.stageId, 'not-a-uuid'), 'stale_execution');
    expectRefusal(await as(w1, 'acquire', d.stageId, other.executionId), 'stale_execution');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
  });

  it('row 3: an old executionId (superseded by a new dispatch) gets stale_execution; the current one is granted', async () => {
    const d = await dispatched();
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'LEASE_EXPIRED' });
    const next = await redispatch(d.stageId);
    expectRefusal(await as(w1, 'acquire', d.stageId, d.executionId), 'stale_execution');
    expectGrant(await as(w1, 'acquire', d.stageId, next), 1);
  });

  it('row 3: the current execution that has ended gets stale_execution', async () => {
    const d = await dispatched();
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'result' });
    expectRefusal(await as(w1, 'acquire', d.stageId, d.executionId), 'stale_execution');
  });

  it('row 3 before row 4: an unknown executionId on a leased stage gets stale_execution, not lease_held', async () => {
    const d = await leased();
    expectRefusal(await as(w2, 'acquire', d.stageId, randomUUID()), 'stale_execution');
  });

  it('row 1: a cancelled pipeline gets pipeline_cancelled', async () => {
    const d = await dispatched();
    await setPipeline(d.pipelineId, { status: 'Cancelled' });
    expectRefusal(await as(w1, 'acquire', d.stageId, d.executionId), 'pipeline_cancelled');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
  });

  it('row 1 before rows 2 and 3: a cancelled pipeline with a Cancelled stage and a stale executionId gets pipeline_cancelled', async () => {
    const d = await dispatched();
    await setPipeline(d.pipelineId, { status: 'Cancelled' });
    await setStage(d.stageId, { status: 'Cancelled' });
    expectRefusal(await as(w1, 'acquire', d.stageId, randomUUID()), 'pipeline_cancelled');
  });

  it('row 2: a terminal stage gets stage_terminal (Completed, Failed, Skipped, Cancelled)', async () => {
    for (const status of ['Completed', 'Failed', 'Skipped', 'Cancelled'] as const) {
      const d = await dispatched();
      await setStage(d.stageId, { status });
      expectRefusal(await as(w1, 'acquire', d.stageId, d.executionId), 'stage_terminal');
    }
  });

  it('row 2 before row 3: a terminal stage with an unknown executionId gets stage_terminal', async () => {
    const d = await dispatched();
    await setStage(d.stageId, { status: 'Completed' });
    expectRefusal(await as(w1, 'acquire', d.stageId, randomUUID()), 'stage_terminal');
  });

  it('row 5: a lease that expired but whose expiry was not yet processed gets lease_expired', async () => {
    const d = await leased();
    await setExecution(d.executionId, { leaseExpiresAt: new Date(Date.now() - 1000) });
    expectRefusal(await as(w1, 'acquire', d.stageId, d.executionId), 'lease_expired');
    expectRefusal(await as(w2, 'acquire', d.stageId, d.executionId), 'lease_expired');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Running', attempt: 1 });
  });

  it('a never-dispatched stage (NotStarted, no execution) refuses acquisition as stale_execution', async () => {
    const d = await dispatched(gw.appA.id, 1);
    expectRefusal(await as(w1, 'acquire', d.otherStageIds[0]!, d.executionId), 'stale_execution');
    expectRefusal(await as(w1, 'acquire', d.otherStageIds[0]!, randomUUID()), 'stale_execution');
  });
});

describe('lease renew (addendum §12 Renew table)', () => {
  it('row 6: renew by the owner is granted with the same attempt and a later leaseExpiresAt (now + 60 s)', async () => {
    const d = await dispatched();
    const acquiredUntil = expectGrant(await as(w1, 'acquire', d.stageId, d.executionId), 1);
    await sleep(30);
    const before = Date.now();
    const r = await as(w1, 'renew', d.stageId, d.executionId);
    const after = Date.now();
    const renewedUntil = expectGrant(r, 1);
    expect(renewedUntil).toBeGreaterThan(acquiredUntil);
    expect(renewedUntil).toBeGreaterThanOrEqual(before + 60_000);
    expect(renewedUntil).toBeLessThanOrEqual(after + 60_000);
    expect((await executionRow(d.executionId)).leaseExpiresAt!.getTime()).toBe(renewedUntil);
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Running', attempt: 1 });
  });

  it('row 6: renewal sets the expiry to the later of the current expiry and now + 60 s', async () => {
    const d = await leased();
    const far = new Date(Date.now() + 10 * 60_000);
    await setExecution(d.executionId, { leaseExpiresAt: far });
    const until = expectGrant(await as(w1, 'renew', d.stageId, d.executionId), 1);
    expect(until).toBe(far.getTime());
    expect((await executionRow(d.executionId)).leaseExpiresAt!.getTime()).toBe(far.getTime());
  });

  it('row 6: the attempt returned by renew is the execution attempt (attempt 2 after a retry)', async () => {
    const d = await leased();
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'LEASE_EXPIRED' });
    const next = await redispatch(d.stageId);
    expectGrant(await as(w1, 'acquire', d.stageId, next), 2);
    expectGrant(await as(w1, 'renew', d.stageId, next), 2);
  });

  it('row 5: renew by another worker of the same application gets not_owner', async () => {
    const d = await leased();
    const before = await executionRow(d.executionId);
    expectRefusal(await as(w2, 'renew', d.stageId, d.executionId), 'not_owner');
    const after = await executionRow(d.executionId);
    expect(after.leaseOwner).toBe(w1.workerId);
    expect(after.leaseExpiresAt!.getTime()).toBe(before.leaseExpiresAt!.getTime());
  });

  it('row 5: renew of a never-leased execution gets not_owner', async () => {
    const d = await dispatched();
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'not_owner');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
  });

  it('row 4: renew after the execution ended by LEASE_EXPIRED gets lease_expired', async () => {
    const d = await leased();
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'LEASE_EXPIRED' });
    await setStage(d.stageId, { status: 'RetryScheduled' });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'lease_expired');
  });

  it('row 4: renew after the execution ended by TIMEOUT gets lease_expired (lease itself still unexpired)', async () => {
    const d = await leased();
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'TIMEOUT' });
    await setStage(d.stageId, { status: 'RetryScheduled' });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'lease_expired');
  });

  it('row 4: renew of an expired lease (expiry not processed yet) gets lease_expired', async () => {
    const d = await leased();
    await setExecution(d.executionId, { leaseExpiresAt: new Date(Date.now() - 1000) });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'lease_expired');
  });

  it('row 4 before row 5: an expired lease renewed by another worker gets lease_expired, not not_owner', async () => {
    const d = await leased();
    await setExecution(d.executionId, { leaseExpiresAt: new Date(Date.now() - 1000) });
    expectRefusal(await as(w2, 'renew', d.stageId, d.executionId), 'lease_expired');
  });

  it("row 3: renew after the execution ended by 'result' gets stale_execution", async () => {
    const d = await leased();
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'result' });
    await setStage(d.stageId, { status: 'RetryScheduled' });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'stale_execution');
  });

  it('row 3: renew with an executionId that is not current gets stale_execution (unknown, or superseded by a redispatch)', async () => {
    const d = await leased();
    expectRefusal(await as(w1, 'renew', d.stageId, randomUUID()), 'stale_execution');
    expectRefusal(await as(w1, 'renew', d.stageId, 'not-a-uuid'), 'stale_execution');
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'LEASE_EXPIRED' });
    await redispatch(d.stageId);
    // The old execution is no longer current: row 3 wins over row 4.
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'stale_execution');
  });

  it('row 2: renew on a terminal stage gets stage_terminal, before row 3', async () => {
    const d = await leased();
    await setStage(d.stageId, { status: 'Completed' });
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'result' });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'stage_terminal');
    expectRefusal(await as(w1, 'renew', d.stageId, randomUUID()), 'stage_terminal');
  });

  it('row 1: renew on a cancelled pipeline gets pipeline_cancelled, before row 2', async () => {
    const d = await leased();
    await setPipeline(d.pipelineId, { status: 'Cancelled' });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'pipeline_cancelled');
    await setStage(d.stageId, { status: 'Cancelled' });
    await setExecution(d.executionId, { endedAt: new Date(), endReason: 'cancelled' });
    expectRefusal(await as(w1, 'renew', d.stageId, d.executionId), 'pipeline_cancelled');
  });
});

describe.each(['acquire', 'renew'] as const)('lease %s: credentials, stage and body', (op) => {
  it('401 when workerId is not the worker of the session', async () => {
    const d = await leased();
    expectProblem(
      await lease(
        op,
        d.stageId,
        { executionId: d.executionId, workerId: w2.workerId },
        w1.sessionToken,
      ),
      401,
      'unauthorized',
    );
    // Also before the stage lookup.
    expectProblem(
      await lease(
        op,
        999_999_999,
        { executionId: d.executionId, workerId: w2.workerId },
        w1.sessionToken,
      ),
      401,
      'unauthorized',
    );
    // A workerId longer than any worker id (the fuzzer's 10 KiB one was a 500).
    expectProblem(
      await lease(op, d.stageId, { executionId: d.executionId, workerId: 'w'.repeat(10_000) }, w1.sessionToken),
      401,
      'unauthorized',
    );
    expect((await executionRow(d.executionId)).leaseOwner).toBe(w1.workerId);
  });

  it('401 for a missing or invalid session, before the path and the body', async () => {
    const d = await dispatched();
    expectProblem(
      await lease(op, d.stageId, { executionId: d.executionId, workerId: w1.workerId }, null),
      401,
      'unauthorized',
    );
    expectProblem(
      await lease(
        op,
        d.stageId,
        { executionId: d.executionId, workerId: w1.workerId },
        'pws_bogus',
      ),
      401,
      'unauthorized',
    );
    expectProblem(await lease(op, '0', {}, null), 401, 'unauthorized');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
  });

  it('404 for a stage of another application, and for an unknown stage', async () => {
    const d = await dispatched();
    const r = await as(wB, op, d.stageId, d.executionId);
    expectProblem(r, 404, 'not_found');
    expect(r.body.instance).toBe(`/stages/${d.stageId}/lease/${op}`);
    expectProblem(await as(w1, op, 999_999_999, d.executionId), 404, 'not_found');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
  });

  it('400 at stageId for an invalid stageId, before the body', async () => {
    for (const bad of ['0', '01', '9007199254740992']) {
      expectProblem(
        await lease(op, bad, { executionId: 'e', workerId: w1.workerId }),
        400,
        'validation_failed',
        ['stageId'],
      );
    }
    expectProblem(await lease(op, '0', {}), 400, 'validation_failed', ['stageId']);
  });

  it('a path id that is not a positive integer at all: 401 without a valid session, then 400 at stageId (addendum §1, §3; decision 0117)', async () => {
    for (const bad of ['abc', '-1', '1.5', '1e3', '%20', '0x1', '%E2%91%A0', '%ZZ', 'a:b']) {
      const r = await lease(op, bad, { executionId: 'e', workerId: w1.workerId });
      expectProblem(r, 400, 'validation_failed', ['stageId']);
      expect(r.body.instance).toBe(`/stages/${bad}/lease/${op}`);
      expectProblem(await lease(op, bad, {}), 400, 'validation_failed', ['stageId']);
      expectProblem(await lease(op, bad, { executionId: 'e', workerId: w1.workerId }, null), 401, 'unauthorized');
      expectProblem(await lease(op, bad, { executionId: 'e', workerId: w1.workerId }, 'pws_bogus'), 401, 'unauthorized');
    }
  });

  it('odd executionIds never answer 5xx: any string is refused with stale_execution (200), an empty one, NUL or a lone surrogate is a 400, a body past its limit a 413 (decision 0117)', async () => {
    const d = await leased();
    const odd = ['a:b', ' ', 'has spaces', 'x'.repeat(60_000), 'é', '执行-🙂', 'tab\tand\nnewline', `${d.executionId}:1`, ` ${d.executionId}`, d.executionId.replace(/-/g, '')];
    for (const executionId of odd) expectRefusal(await as(w1, op, d.stageId, executionId), 'stale_execution');
    for (const executionId of ['', 'a\u0000b', '\ud800']) {
      expectProblem(await as(w1, op, d.stageId, executionId), 400, 'validation_failed', ['/executionId']);
    }
    expectProblem(await as(w1, op, d.stageId, 'x'.repeat(70_000)), 413, 'payload_too_large');
    expect(await executionRow(d.executionId)).toMatchObject({ attempt: 1, leaseOwner: w1.workerId, endedAt: null });
  });

  it('400 for a malformed body', async () => {
    const d = await dispatched();
    expectProblem(await lease(op, d.stageId, {}), 400, 'validation_failed', [
      '/executionId',
      '/workerId',
    ]);
    expectProblem(
      await lease(op, d.stageId, { executionId: '', workerId: w1.workerId }),
      400,
      'validation_failed',
      ['/executionId'],
    );
    expectProblem(
      await lease(op, d.stageId, { executionId: d.executionId, workerId: '' }),
      400,
      'validation_failed',
      ['/workerId'],
    );
    expectProblem(
      await lease(op, d.stageId, { executionId: 7, workerId: w1.workerId }),
      400,
      'validation_failed',
      ['/executionId'],
    );
    expectProblem(
      await gw.call('POST', `/stages/${d.stageId}/lease/${op}`, {
        raw: '{',
        headers: { 'x-worker-session': w1.sessionToken },
      }),
      400,
      'validation_failed',
      [''],
    );
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
  });
});

describe('concurrent acquisition', () => {
  it('exactly one of many concurrent acquires of one execution is granted; the others get lease_held', async () => {
    const d = await dispatched();
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        as(i % 2 === 0 ? w1 : w2, 'acquire', d.stageId, d.executionId),
      ),
    );
    const granted = replies.filter((r) => r.body?.acquired === true);
    expect(granted).toHaveLength(1);
    for (const r of replies.filter((x) => x.body?.acquired !== true))
      expectRefusal(r, 'lease_held');
    expect(await stageRow(d.stageId)).toMatchObject({ status: 'Running', attempt: 1 });
  });

  it('more racing acquires than the pool has connections: the losers all get lease_held, none waits out the pool', async () => {
    // The test database's pool has 5 connections; each loser takes the slow path (a transaction).
    const d = await dispatched();
    const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => as(i % 2 === 0 ? w1 : w2, 'acquire', d.stageId, d.executionId)));
    expect(replies.filter((r) => r.body?.acquired === true)).toHaveLength(1);
    for (const r of replies.filter((x) => x.body?.acquired !== true)) expectRefusal(r, 'lease_held');
  }, 30_000);
});

describe('an acquire decided in one statement (decisions 0062, 0121)', () => {
  const slowPaths = async () => {
    const metric = metricsRegistry.getSingleMetric('po_lease_slow_paths_total');
    const values = metric ? (await metric.get()).values : [];
    return values.find((v) => v.labels.operation === 'acquire')?.value ?? 0;
  };

  it('a published stage is granted by the compare-and-set statement alone: its dispatch committed before the publish', async () => {
    const seeded = await gw.seedDispatched(gw.appA.id, { name: 'lease-one-statement', stages: [{ stageName: 's0', stageHandlerName: 'h' }] }, [0]);
    const before = await slowPaths();
    expectGrant(await as(w1, 'acquire', seeded.stageIds[0]!, seeded.executions[0]!.executionId), 1);
    expect(await slowPaths()).toBe(before);
  });

  it('a refusal still takes the slow path, which names the reason', async () => {
    const d = await leased();
    const before = await slowPaths();
    expectRefusal(await as(w2, 'acquire', d.stageId, d.executionId), 'lease_held');
    expect(await slowPaths()).toBe(before + 1);
  });
});

describe('acquires in one statement (decision 0108)', () => {
  const hash = (s: Session) => hashSecret(s.sessionToken);
  const request = (s: Session, stageId: number, executionId: string, workerId = s.workerId) => ({
    sessionTokenHash: hash(s),
    stageId,
    executionId,
    workerId,
    leaseSeconds: 60,
  });

  it('grants each request whose acquire row 6 holds, in request order, and refuses the others (another worker id, another application, stale, cancelled, held)', async () => {
    const [a, b, wrongWorker, otherApp, stale, cancelled, held] = await Promise.all([dispatched(), dispatched(), dispatched(), dispatched(gw.appB.id), dispatched(), dispatched(), leased()]);
    await setPipeline(cancelled.pipelineId, { status: 'Cancelled' });
    const grants = await tryAcquireLeases(sqlOf(gw.db), [
      request(w1, a.stageId, a.executionId),
      request(w1, wrongWorker.stageId, wrongWorker.executionId, w2.workerId),
      request(w1, otherApp.stageId, otherApp.executionId),
      request(w2, b.stageId, b.executionId),
      request(w1, stale.stageId, randomUUID()),
      request(w1, cancelled.stageId, cancelled.executionId),
      request(w2, held.stageId, held.executionId),
    ]);
    expect(grants.map((g) => g?.attempt ?? null)).toEqual([1, null, null, 1, null, null, null]);
    expect(await executionRow(a.executionId)).toMatchObject({ attempt: 1, leaseOwner: w1.workerId });
    expect(await executionRow(b.executionId)).toMatchObject({ attempt: 1, leaseOwner: w2.workerId });
    expect((await executionRow(b.executionId)).leaseExpiresAt!.getTime()).toBe(grants[3]!.leaseExpiresAt.getTime());
    for (const d of [wrongWorker, otherApp, stale, cancelled]) expect(await stageRow(d.stageId)).toMatchObject({ status: 'Pending', attempt: 0 });
    expect(await executionRow(held.executionId)).toMatchObject({ leaseOwner: w1.workerId });
  });

  it('acquires that arrive while one is in flight go together; two for one stage get one grant between them', async () => {
    const stages = await Promise.all(Array.from({ length: 6 }, () => dispatched()));
    const sql = sqlOf(gw.db);
    const first = acquireLease(sql, request(w1, stages[0]!.stageId, stages[0]!.executionId));
    const rest = stages.slice(1).map((d, i) => acquireLease(sql, request(i % 2 ? w1 : w2, d.stageId, d.executionId)));
    const twice = [acquireLease(sql, request(w1, stages[5]!.stageId, stages[5]!.executionId)), acquireLease(sql, request(w2, stages[5]!.stageId, stages[5]!.executionId))];
    const grants = await Promise.all([first, ...rest]);
    expect(grants.every((g) => g?.attempt === 1)).toBe(true);
    // stages[5] was also in `rest`: neither duplicate gets it again.
    expect(await Promise.all(twice)).toEqual([null, null]);
    for (const d of stages) expect(await stageRow(d.stageId)).toMatchObject({ status: 'Running', attempt: 1 });
  });
});
