// The per-process API-key cache (decision 0063; addendum §2: a disabled or expired key is a 401).
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { createApiKeyCache, type ApiKeyCache } from './api-key-cache.js';
import { sqlOf } from './index.js';

let database: TestDatabase;
let applicationId: number;
const caches: ApiKeyCache[] = [];
const clock = { now: 1_000_000 };

beforeAll(async () => {
  database = await createTestDatabase();
  applicationId = (await database.db.application.create({ data: { name: 'keys' } })).id;
});

afterAll(async () => {
  await Promise.all(caches.map((c) => c.close()));
  await database.drop();
});

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');

async function newKey(expiresAt: Date | null = null): Promise<{ hash: string; id: number }> {
  const hash = hashOf(`pos_${randomBytes(32).toString('base64url')}`);
  const key = await database.db.apiKey.create({ data: { applicationId, keyHash: hash, expiresAt } });
  return { hash, id: key.id };
}

/** A cache whose listening connection is up (it caches nothing before). */
async function cache(ttlMs = 60_000): Promise<ApiKeyCache> {
  const c = createApiKeyCache(sqlOf(database.db), { ttlMs, max: 100, clock: () => clock.now });
  caches.push(c);
  await c.listening;
  return c;
}

describe('API-key cache', () => {
  it('a disabled key is refused as soon as the disable commits, though it was cached', async () => {
    const c = await cache();
    const key = await newKey();
    expect(await c.resolve(key.hash, new Date())).toEqual({ applicationId, keyId: key.id });
    await database.db.apiKey.update({ where: { id: key.id }, data: { disabledAt: new Date() } });
    await expect.poll(() => c.resolve(key.hash, new Date()), { timeout: 2000, interval: 10 }).toBeNull();
  });

  it('checks expiry on every use, cached or not', async () => {
    const c = await cache();
    const expiresAt = new Date('2030-01-01T00:00:00Z');
    const key = await newKey(expiresAt);
    expect(await c.resolve(key.hash, new Date('2029-12-31T23:59:59Z'))).toEqual({ applicationId, keyId: key.id });
    expect(await c.resolve(key.hash, expiresAt)).toBeNull();
    expect(await c.resolve(key.hash, new Date('2029-12-31T23:59:59Z'))).toEqual({ applicationId, keyId: key.id });
  });

  it('never caches an unknown key: a key created afterwards works at once', async () => {
    const c = await cache();
    const hash = hashOf(`pos_${randomBytes(32).toString('base64url')}`);
    expect(await c.resolve(hash, new Date())).toBeNull();
    const key = await database.db.apiKey.create({ data: { applicationId, keyHash: hash } });
    expect(await c.resolve(hash, new Date())).toEqual({ applicationId, keyId: key.id });
  });

  it('keeps a valid key no longer than the TTL when a change goes unannounced', async () => {
    const c = await cache(5_000);
    const key = await newKey();
    expect(await c.resolve(key.hash, new Date())).not.toBeNull();
    await database.db.$executeRawUnsafe('ALTER TABLE api_keys DISABLE TRIGGER api_keys_changed');
    try {
      await database.db.apiKey.update({ where: { id: key.id }, data: { disabledAt: new Date() } });
      await sleep(50);
      // Unannounced: still served from the cache…
      expect(await c.resolve(key.hash, new Date())).not.toBeNull();
      // …until the TTL passes.
      clock.now += 5_001;
      expect(await c.resolve(key.hash, new Date())).toBeNull();
    } finally {
      await database.db.$executeRawUnsafe('ALTER TABLE api_keys ENABLE TRIGGER api_keys_changed');
    }
  });
});
