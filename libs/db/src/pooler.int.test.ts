// Behind PgBouncer in transaction mode (issue 27, decision 0116): named statements, session settings
// and LISTEN work through a real PgBouncer 1.18, with two processes' pools sharing its server
// connections; without `pgbouncer=true` the same settings travel as startup options.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, startPgBouncer, type PgBouncer, type TestDatabase } from '@po/testing';
import { createApiKeyCache, createDb, sqlOf, statement, type Db } from './index.js';

let database: TestDatabase;
let bouncer: PgBouncer;
const opened: Db[] = [];
const TIMEOUTS = { statementMs: 7000, lockMs: 300, idleInTransactionMs: 9000 };

beforeAll(async () => {
  database = await createTestDatabase();
  // One server connection: every client's transactions take turns on it, as the busiest pooler does.
  bouncer = await startPgBouncer({ poolSize: 1 });
});
afterAll(async () => {
  await Promise.all(opened.map((db) => db.$disconnect()));
  await bouncer?.stop();
  await database.drop();
});

const dbName = () => new URL(database.url).pathname.slice(1);
const pooled = (options: Parameters<typeof createDb>[1] = {}) => {
  const db = createDb(bouncer.url(dbName()), { max: 4, timeouts: TIMEOUTS, ...options });
  opened.push(db);
  return db;
};
const direct = (options: Parameters<typeof createDb>[1] = {}) => {
  const db = createDb(database.url, { max: 4, timeouts: TIMEOUTS, ...options });
  opened.push(db);
  return db;
};

const lookup = statement('test_pooler_lookup', 'SELECT $1::int + 1 AS n');
const prepared = statement(
  'test_pooler_prepared',
  "SELECT name, prepare_time, generic_plans FROM pg_prepared_statements WHERE name LIKE 'test_pooler_lookup%'",
);
const settings = statement(
  'test_pooler_settings',
  `SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock,
     current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('plan_cache_mode') AS plans`,
);
type Prepared = { name: string; prepare_time: Date; generic_plans: string };
type Settings = { statement: string; lock: string; idle: string; plans: string };
const EXPECTED: Settings = { statement: '7s', lock: '300ms', idle: '9s', plans: 'force_generic_plan' };

describe('named statements behind a transaction-mode pooler', () => {
  it('two processes share a server connection: each prepares only what it lacks, then reuses the generic plan', async () => {
    const [a, b] = [pooled(), pooled()];
    const first = await sqlOf(a).transaction(async (tx) => {
      await tx.query(lookup, [1]);
      return tx.query<Prepared>(prepared);
    });
    expect(first).toHaveLength(1);
    expect(first[0]!.name).toMatch(/^test_pooler_lookup_[0-9a-f]{12}$/);
    // Process b lands on the same server connection: it finds the statement there and runs it
    // without preparing it again (same prepare_time), on its generic plan.
    const second = await sqlOf(b).transaction(async (tx) => {
      expect(await tx.query<{ n: number }>(lookup, [41])).toEqual([{ n: 42 }]);
      return tx.query<Prepared>(prepared);
    });
    expect(second).toHaveLength(1);
    expect(second[0]!.prepare_time).toEqual(first[0]!.prepare_time);
    expect(Number(second[0]!.generic_plans)).toBeGreaterThan(Number(first[0]!.generic_plans));
  });

  it('many transactions and single statements of two pools interleave on one server connection without a prepared-statement error', async () => {
    const [a, b] = [pooled(), pooled()];
    const runs = Array.from({ length: 200 }, (_, i) => {
      const sql = sqlOf(i % 2 ? a : b);
      return i % 3 === 0 ? sql.query<{ n: number }>(lookup, [i]) : sql.transaction((tx) => tx.query<{ n: number }>(lookup, [i]), { keyLookups: i % 2 === 0 });
    });
    const rows = await Promise.all(runs);
    expect(rows.map((r) => r[0]!.n)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });
});

describe('session settings (statement, lock and idle-in-transaction timeouts; generic plans)', () => {
  it('behind the pooler every transaction sets them: sql transactions, sql single statements (a transaction each) and Prisma transactions', async () => {
    const db = pooled();
    expect((await sqlOf(db).transaction((tx) => tx.query<Settings>(settings)))[0]).toEqual(EXPECTED);
    expect((await sqlOf(db).query<Settings>(settings))[0]).toEqual(EXPECTED);
    expect((await sqlOf(db).transaction((tx) => tx.query<Settings>(settings), { readOnly: true }))[0]).toEqual(EXPECTED);
    const inPrisma = await db.$transaction((tx) => tx.$queryRawUnsafe<Settings[]>(settings.text));
    expect(inPrisma[0]).toMatchObject({ statement: '7s', lock: '300ms', idle: '9s' });
  });

  it('directly they are the connection\'s own, for every statement', async () => {
    const db = direct();
    expect((await sqlOf(db).query<Settings>(settings))[0]).toEqual(EXPECTED);
    expect((await db.$queryRawUnsafe<Settings[]>(settings.text))[0]).toMatchObject({ statement: '7s', lock: '300ms', idle: '9s' });
  });

  it('a lock wait ends at lock_timeout instead of waiting for the holder, through the pooler too', async () => {
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query('CREATE TABLE IF NOT EXISTS test_pooler_locks (id int PRIMARY KEY)');
      await holder.query('INSERT INTO test_pooler_locks VALUES (1) ON CONFLICT DO NOTHING');
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM test_pooler_locks WHERE id = 1 FOR UPDATE');
      const update = statement('test_pooler_lock_wait', 'UPDATE test_pooler_locks SET id = 1 WHERE id = 1');
      for (const db of [pooled(), direct()]) {
        const started = Date.now();
        await expect(sqlOf(db).transaction((tx) => tx.query(update))).rejects.toMatchObject({ code: '55P03' });
        expect(Date.now() - started).toBeLessThan(3000);
      }
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });
});

describe('LISTEN behind the pooler', () => {
  it('goes to DATABASE_DIRECT_URL: the caches listen there and hear a change written through the pooler', async () => {
    const db = pooled({ directUrl: database.url });
    const cache = createApiKeyCache(sqlOf(db), { ttlMs: 60_000, max: 10 });
    const heard: string[] = [];
    const unsubscribe = sqlOf(db).notifications.subscribe(['po_api_keys'], { notify: (_channel, payload) => heard.push(payload), listening: () => undefined });
    try {
      await cache.listening;
      expect(sqlOf(db).notifications.connections).toBe(1);
      expect(sqlOf(db).notifications.unavailable).toBeNull();
      const app = await db.application.create({ data: { name: 'pooled' } });
      const key = await db.apiKey.create({ data: { applicationId: app.id, keyHash: 'f'.repeat(64) } });
      await db.apiKey.update({ where: { id: key.id }, data: { disabledAt: new Date() } });
      await expect.poll(() => heard, { timeout: 2000, interval: 10 }).toContain('f'.repeat(64));
    } finally {
      unsubscribe();
      await cache.close();
    }
    expect(sqlOf(db).notifications.connections).toBe(0);
  });

  it('without a direct server nothing listens, and the reason is told', async () => {
    const db = pooled();
    expect(sqlOf(db).notifications.unavailable).toMatch(/DATABASE_DIRECT_URL is not set/);
  });

  it('refuses a ?schema= it could not apply to single statements', () => {
    expect(() => createDb(`${bouncer.url(dbName())}&schema=other`)).toThrow(/not supported with pgbouncer=true/);
    expect(() => createDb(`${bouncer.url(dbName())}&schema=public`, { max: 1 }).$disconnect()).not.toThrow();
  });
});
