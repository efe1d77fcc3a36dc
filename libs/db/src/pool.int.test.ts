// The pool's idle connections (decision 0112): kept through a lull by default, closed after
// `idleMs` when a caller asks for less.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { createDb, sqlOf, statement, type Db } from './index.js';

let database: TestDatabase;
const opened: Db[] = [];
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(opened.map((db) => db.$disconnect()));
  await database.drop();
});

const hold = statement('test_pool_hold', 'SELECT pg_sleep($1::float8) IS NULL AS slept');

/** Opens three connections at once, then leaves the pool idle for `ms`; resolves with how many are still open. */
async function openAfterLull(db: Db, ms: number): Promise<number> {
  const sql = sqlOf(db);
  await Promise.all([1, 2, 3].map(() => sql.query(hold, [0.05])));
  expect(sql.pool.totalCount).toBe(3);
  await sleep(ms);
  return sql.pool.totalCount;
}

describe('idle connections', () => {
  it('stay open five minutes by default (pg-pool alone closes them after 10 s), with TCP keepalive', async () => {
    const db = createDb(database.url, { max: 3 });
    opened.push(db);
    const options = sqlOf(db).pool.options as { idleTimeoutMillis?: number; keepAlive?: boolean };
    expect(options.idleTimeoutMillis).toBe(300_000);
    expect(options.keepAlive).toBe(true);
    expect(await openAfterLull(db, 600)).toBe(3);
  });

  it('are closed after idleMs', async () => {
    const db = createDb(database.url, { max: 3, idleMs: 100 });
    opened.push(db);
    expect(await openAfterLull(db, 600)).toBe(0);
  });
});

// A failover that leaves the old primary running read-only (issue 27): its answer to a write,
// 25006, retires every connection of the pool, so the next ones go through the address again.
describe('a server that turned read-only', () => {
  const backendPid = statement('test_pool_backend_pid', 'SELECT pg_backend_pid() AS pid');
  const write = statement('test_pool_write', 'CREATE TEMP TABLE IF NOT EXISTS test_pool_written (id int)');

  /** Opens `n` connections and makes each one's server refuse writes, as a demoted primary does. */
  async function demoted(db: Db, n: number): Promise<number[]> {
    const { pool } = sqlOf(db);
    const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
    const pids: number[] = [];
    for (const c of clients) {
      await c.query('SET default_transaction_read_only = on');
      pids.push((await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    }
    clients.forEach((c) => c.release());
    return pids;
  }

  const alive = async (pids: number[]) =>
    (await database.db.$queryRawUnsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])', pids))[0]!.n;

  it('one refused write drops every connection of the pool, idle ones included; the next statements reach a writable server', async () => {
    const db = createDb(database.url, { max: 3 });
    opened.push(db);
    const pids = await demoted(db, 3);
    expect(await alive(pids)).toBe(3);
    await expect(sqlOf(db).transaction((tx) => tx.query(write))).rejects.toMatchObject({ code: '25006' });
    await expect.poll(() => alive(pids), { timeout: 3000, interval: 20 }).toBe(0);
    const [now] = await sqlOf(db).query<{ pid: number }>(backendPid);
    expect(pids).not.toContain(now!.pid);
    await sqlOf(db).transaction((tx) => tx.query(write));
  });

  it("so does a refusal inside a Prisma transaction (whose adapter hands the connection back as healthy)", async () => {
    const db = createDb(database.url, { max: 2 });
    opened.push(db);
    const pids = await demoted(db, 2);
    await expect(db.$transaction((tx) => tx.$executeRawUnsafe(write.text))).rejects.toThrow();
    await expect.poll(() => alive(pids), { timeout: 3000, interval: 20 }).toBe(0);
    await db.$transaction((tx) => tx.$executeRawUnsafe(write.text));
  });
});
