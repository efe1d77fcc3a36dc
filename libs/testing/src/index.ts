// Helpers for integration tests: a migrated, private PostgreSQL database per test file (cloned from
// the template built by global-setup.ts) and a private Redis key prefix for BullMQ.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb, type Db } from '@po/db';
import { Redis } from 'ioredis';
import pg from 'pg';
import { TEST_DATABASE_ADMIN_URL, TEST_REDIS_URL, TEST_TEMPLATE_DATABASE, databaseUrl, quoteIdent } from './config.js';

export { TEST_DATABASE_ADMIN_URL, TEST_DATABASE_URL, TEST_REDIS_URL, TEST_TEMPLATE_DATABASE } from './config.js';

export interface TestDatabase {
  /** postgresql:// URL of the new database. */
  url: string;
  /** A client on it (pool of 5). */
  db: Db;
  /** Disconnects `db` and drops the database WITH (FORCE). Safe to call twice. */
  drop(): Promise<void>;
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh database `po_test_<random>`, cloned from the migrated template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `po_test_${randomBytes(6).toString('hex')}`;
  await withAdmin(async (admin) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(TEST_TEMPLATE_DATABASE)}`);
        return;
      } catch (err) {
        // 55006: "source database is being accessed by other users" (someone is connected to it).
        if ((err as { code?: string }).code !== '55006' || attempt >= 20) {
          if ((err as { code?: string }).code === '3D000') throw new Error(`${TEST_TEMPLATE_DATABASE} does not exist: run the tests through vitest's integration project (globalSetup builds it)`, { cause: err });
          throw err;
        }
        await sleep(50 * attempt);
      }
    }
  });
  const url = databaseUrl(name);
  const db = createDb(url, { max: 5 });
  let dropped: Promise<void> | undefined;
  const drop = () =>
    (dropped ??= (async () => {
      await db.$disconnect();
      await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`));
    })());
  return { url, db, drop };
}

/** A unique BullMQ prefix, `potest:<random>` or `potest:<label>:<random>`. */
export function testQueuePrefix(label?: string): string {
  const random = randomBytes(6).toString('hex');
  const safe = label?.replace(/[^A-Za-z0-9_-]+/g, '-');
  return safe ? `potest:${safe}:${random}` : `potest:${random}`;
}

/** Deletes every Redis key under `prefix` (`prefix:*`, and `prefix` itself) with SCAN + UNLINK. */
export async function cleanupRedisPrefix(prefix: string): Promise<void> {
  if (!prefix) throw new Error('cleanupRedisPrefix needs a non-empty prefix');
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}:*`;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
    await redis.unlink(prefix);
  } finally {
    redis.disconnect();
  }
}
export { expectEmpty, expectProblem, expectValid, type HttpReply } from './http-assertions.js';
export { freeTcpPort, startPgBouncer, type PgBouncer, type PgBouncerOptions } from './pgbouncer.js';
export { stageNextMessage } from './stage-next-message.js';
