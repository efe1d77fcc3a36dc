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
