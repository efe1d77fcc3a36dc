import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUniqueViolation } from '@po/db';
import { TEST_DATABASE_ADMIN_URL, createTestDatabase, type TestDatabase } from './index.js';

async function databaseExists(url: string): Promise<boolean> {
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL });
  await admin.connect();
  try {
    return ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount ?? 0) > 0;
  } finally {
    await admin.end();
  }
}

describe('createTestDatabase', () => {
  let a: TestDatabase;
  let b: TestDatabase;
  beforeAll(async () => {
    [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([a?.drop(), b?.drop()]);
  });

  it('gives each caller its own migrated database', async () => {
    expect(a.url).not.toBe(b.url);
    expect(new URL(a.url).pathname).toMatch(/^\/po_test_[0-9a-f]+$/);
    await a.db.application.create({ data: { name: 'only in a' } });
    expect(await a.db.application.count()).toBe(1);
    expect(await b.db.application.count()).toBe(0);
  });

  it('detects a unique violation on api_keys.key_hash', async () => {
    const app = await a.db.application.create({ data: { name: 'keys' } });
    const keyHash = 'a'.repeat(64);
    await a.db.apiKey.create({ data: { applicationId: app.id, keyHash } });
    const err = await a.db.apiKey.create({ data: { applicationId: app.id, keyHash } }).catch((e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
    expect(isUniqueViolation(err, 'api_keys_key_hash_key')).toBe(true);
    expect(isUniqueViolation(err, 'workers_application_id_instance_id_key')).toBe(false);
    // Inside an interactive transaction too.
    const txErr = await a.db
      .$transaction(async (tx) => tx.apiKey.create({ data: { applicationId: app.id, keyHash } }))
      .catch((e: unknown) => e);
    expect(isUniqueViolation(txErr, 'api_keys_key_hash_key')).toBe(true);
    // Raw statements fail with P2010 carrying the same adapter cause.
    const rawErr = await a.db.$executeRaw`INSERT INTO api_keys (application_id, key_hash) VALUES (${app.id}, ${keyHash})`.catch(
      (e: unknown) => e,
    );
    expect(isUniqueViolation(rawErr, 'api_keys_key_hash_key')).toBe(true);
    expect(isUniqueViolation(new Error('nope'))).toBe(false);
  });

  it('drop() removes the database', async () => {
    const c = await createTestDatabase();
    await c.db.application.count();
    expect(await databaseExists(c.url)).toBe(true);
    await c.drop();
    expect(await databaseExists(c.url)).toBe(false);
    await c.drop(); // idempotent
  });
});

describe('isUniqueViolation shapes', () => {
  const p2002 = (meta: unknown) => Object.assign(new Error('Unique constraint failed'), { code: 'P2002', meta });
  it('matches the adapter shape with only fields', () => {
    const err = p2002({ modelName: 'ApiKey', driverAdapterError: { cause: { kind: 'UniqueConstraintViolation', constraint: { fields: ['key_hash'] } } } });
    expect(isUniqueViolation(err, 'api_keys_key_hash_key')).toBe(true);
    expect(isUniqueViolation(err, 'api_keys_other_key')).toBe(false);
    const withTable = p2002({ driverAdapterError: { cause: { constraint: { fields: ['"application_id"', '"instance_id"'] }, table: 'workers' } } });
    expect(isUniqueViolation(withTable, 'workers_application_id_instance_id_key')).toBe(true);
    expect(isUniqueViolation(withTable, 'other_application_id_instance_id_key')).toBe(false);
  });
  it('matches the native-engine target shapes and raw pg errors', () => {
    expect(isUniqueViolation(p2002({ target: 'api_keys_key_hash_key' }), 'api_keys_key_hash_key')).toBe(true);
    expect(isUniqueViolation(p2002({ target: ['key_hash'] }), 'api_keys_key_hash_key')).toBe(true);
    expect(isUniqueViolation({ code: '23505', constraint: 'api_keys_key_hash_key' }, 'api_keys_key_hash_key')).toBe(true);
    expect(isUniqueViolation({ code: 'P2003' })).toBe(false);
    expect(isUniqueViolation(Object.assign(new Error('raw'), { code: 'P2010', meta: { driverAdapterError: { cause: { kind: 'ForeignKeyConstraintViolation' } } } }))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});
