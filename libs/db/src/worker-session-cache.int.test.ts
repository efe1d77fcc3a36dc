// The worker-gateway's session cache (decision 0099): filled by the caller's read, dropped by the
// worker_sessions trigger's NOTIFY, emptied by any API-key change.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { sqlOf } from './index.js';
import { createWorkerSessionCache, type LiveSession } from './worker-session-cache.js';

let database: TestDatabase;
let applicationId: number;
let apiKeyId: number;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'sessions' } })).id;
  apiKeyId = (await database.db.apiKey.create({ data: { applicationId, keyHash: 'k'.repeat(64) } })).id;
});
afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
  await database.drop();
});

/** A current session of a new worker, and a cache with a loader that counts its reads. */
async function setup() {
  const worker = await database.db.worker.create({ data: { id: randomUUID(), applicationId, instanceId: randomUUID() } });
  const tokenHash = randomUUID().replace(/-/g, '').padEnd(64, '0');
  await database.db.workerSession.create({
    data: { tokenHash, workerId: worker.id, applicationId, apiKeyId, expiresAt: new Date(Date.now() + 3_600_000) },
  });
  const cache = createWorkerSessionCache(sqlOf(database.db), { ttlMs: 60_000, max: 100 });
  closers.push(() => cache.close());
  await cache.listening;
  let reads = 0;
  const live: LiveSession = { workerId: worker.id, applicationId, validUntil: new Date(Date.now() + 3_600_000) };
  const get = () => cache.get(tokenHash, async () => (reads++, live));
  return { tokenHash, get, reads: () => reads };
}

describe('worker session cache', () => {
  it('keeps a live session until it is superseded; an unrelated change of another session drops nothing', async () => {
    const s = await setup();
    const other = await setup();
    await s.get();
    await s.get();
    expect(s.reads()).toBe(1);
    await database.db.workerSession.update({ where: { tokenHash: other.tokenHash }, data: { supersededAt: new Date() } });
    await database.db.workerSession.update({ where: { tokenHash: s.tokenHash }, data: { createdAt: new Date() } });
    // Time for a notification to arrive, were one sent.
    await sleep(200);
    await s.get();
    expect(s.reads()).toBe(1);
    await database.db.workerSession.update({ where: { tokenHash: s.tokenHash }, data: { supersededAt: new Date() } });
    await expect.poll(async () => (await s.get(), s.reads()), { timeout: 2000, interval: 10 }).toBe(2);
  });

  it('forgets every session when any API key changes', async () => {
    const s = await setup();
    await s.get();
    await database.db.apiKey.update({ where: { id: apiKeyId }, data: { expiresAt: new Date(Date.now() + 7_200_000) } });
    await expect.poll(async () => (await s.get(), s.reads()), { timeout: 2000, interval: 10 }).toBe(2);
  });
});
