// Revocation (issue 10, decision 0082; addendum §2, §15): a worker session lives only while the
// API key that bootstrapped it is valid. Disabling or expiring that key ends the session at once:
// lease acquire and renew, heartbeat, events, shutdown and result answer 401.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '@po/db';
import { hashSecret } from '@po/http';
import { expectEmpty, expectProblem } from '@po/testing';
import { startWorkerGateway, type WorkerGatewayHarness } from '../../testing/harness.js';

let gw: WorkerGatewayHarness;
beforeAll(async () => {
  gw = await startWorkerGateway();
});
afterAll(async () => {
  await gw?.close();
});

/** A new key of application A, separate from the harness's own key. */
async function newKey(): Promise<{ id: number; key: string }> {
  const key = `pos_test_${randomUUID()}`;
  const row = await createApiKey(gw.db, {
    applicationId: gw.appA.id,
    keyHash: hashSecret(key),
    expiresAt: null,
  });
  return { id: row.id, key };
}

/** Any writer may disable or expire a key; the admin command is one of them. */
const disable = (keyId: number) =>
  gw.db.$executeRaw`UPDATE api_keys SET disabled_at = now() WHERE id = ${keyId}`;
const expire = (keyId: number) =>
  gw.db
    .$executeRaw`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = ${keyId}`;

/**
 * A worker bootstrapped with its own key, holding the lease of one dispatched stage, and a second
 * stage dispatched but not leased yet.
 */
async function leasingWorker() {
  const bootKey = await newKey();
  const w = await gw.bootstrap(`revoked-${randomUUID()}`, ['h'], bootKey.key);
  const seeded = await gw.seedDispatched(
    gw.appA.id,
    {
      name: 'revocation',
      stages: [
        { stageName: 'a', stageHandlerName: 'h' },
        { stageName: 'b', stageHandlerName: 'h' },
      ],
    },
    [0, 1],
  );
  const [held, next] = seeded.executions as [
    { stageId: number; executionId: string },
    { stageId: number; executionId: string },
  ];
  const session = { 'x-worker-session': w.sessionToken };
  const leaseCall = (op: 'acquire' | 'renew', e: { stageId: number; executionId: string }) =>
    gw.call('POST', `/stages/${e.stageId}/lease/${op}`, {
      json: { executionId: e.executionId, workerId: w.workerId },
      headers: session,
    });
  const acquired = await leaseCall('acquire', held);
  expect(acquired.body?.acquired, acquired.text).toBe(true);
  return {
    bootKey,
    w,
    held,
    next,
    acquire: () => leaseCall('acquire', next),
    renew: () => leaseCall('renew', held),
    heartbeat: () =>
      gw.call('POST', '/workers/heartbeat', { json: { workerId: w.workerId }, headers: session }),
    events: () =>
      gw.call('POST', '/workers/events', {
        json: { workerId: w.workerId, events: [{ kind: 'custom' }] },
        headers: session,
      }),
    shutdown: () =>
      gw.call('POST', '/workers/shutdown', { json: { workerId: w.workerId }, headers: session }),
    /** The result call carries a still valid key of the application: the session's own key decides. */
    result: (apiKey: string) =>
      gw.call('POST', `/stages/${held.stageId}/result`, {
        json: { stageId: held.stageId, executionId: held.executionId, attempt: 1, isSuccess: true },
        headers: { ...session, 'x-api-key': apiKey },
      }),
  };
}

type Worker = Awaited<ReturnType<typeof leasingWorker>>;

async function expectEnded(w: Worker, otherKey: string): Promise<void> {
  expectProblem(await w.acquire(), 401, 'unauthorized');
  expectProblem(await w.renew(), 401, 'unauthorized');
  expectProblem(await w.heartbeat(), 401, 'unauthorized');
  expectProblem(await w.events(), 401, 'unauthorized');
  expectProblem(await w.result(otherKey), 401, 'unauthorized');
  expectProblem(await w.shutdown(), 401, 'unauthorized');
  // Nothing was granted to the ended session: the second stage is still Pending.
  expect(
    (await gw.db.stage.findUniqueOrThrow({ where: { id: BigInt(w.next.stageId) } })).status,
  ).toBe('Pending');
}

describe('a worker session ends with the API key that bootstrapped it', () => {
  it('while the key is valid the session works (the control case)', async () => {
    const w = await leasingWorker();
    expect((await w.renew()).body).toMatchObject({ acquired: true });
    expect((await w.acquire()).body).toMatchObject({ acquired: true });
    expectEmpty(await w.heartbeat());
    expectEmpty(await w.events());
    expect((await w.result(gw.appA.key)).status).toBe(202);
  });

  it('disabled key: lease acquire, renew, heartbeat, events, result and shutdown answer 401', async () => {
    const w = await leasingWorker();
    await disable(w.bootKey.id);
    await expectEnded(w, gw.appA.key);
  });

  it('expired key: lease acquire, renew, heartbeat, events, result and shutdown answer 401', async () => {
    const w = await leasingWorker();
    await expire(w.bootKey.id);
    await expectEnded(w, gw.appA.key);
  });

  it('the session ends with its own key only: a session of another key of the same application keeps working', async () => {
    const revoked = await leasingWorker();
    const other = await leasingWorker();
    await disable(revoked.bootKey.id);
    expectProblem(await revoked.heartbeat(), 401, 'unauthorized');
    expectEmpty(await other.heartbeat());
    expect((await other.renew()).body).toMatchObject({ acquired: true });
    expect((await other.result(other.bootKey.key)).status).toBe(202);
  });

  it('the 401 of an ended session comes before the path, the size and the body', async () => {
    const w = await leasingWorker();
    await disable(w.bootKey.id);
    const session = { 'x-worker-session': w.w.sessionToken };
    expectProblem(
      await gw.call('POST', '/stages/0/lease/acquire', { json: {}, headers: session }),
      401,
      'unauthorized',
    );
    expectProblem(
      await gw.call('POST', `/stages/${w.held.stageId}/result`, {
        raw: '{"stageId":',
        headers: { ...session, 'x-api-key': gw.appA.key },
      }),
      401,
      'unauthorized',
    );
  });
});
