import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWorker, findEnabledApiKeyIgnoringExpiry, findValidApiKey } from '@po/db';
import { hashSecret } from '@po/http';
import { createTestDatabase, type TestDatabase } from '@po/testing';
import { UsageError, runAdmin } from './commands.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

describe('admin command (addendum §2)', () => {
  it('apps create prints the application and a pos_ key of 43 base64url characters, stored only as its hash', async () => {
    const out = (await runAdmin(database.db, ['apps', 'create', '--name', 'billing'])) as Record<string, unknown>;
    expect(out).toEqual({ applicationId: expect.any(Number), name: 'billing', apiKey: expect.stringMatching(/^pos_[A-Za-z0-9_-]{43}$/), keyId: expect.any(Number) });
    const row = await database.db.apiKey.findUniqueOrThrow({ where: { id: out.keyId as number } });
    expect(row.keyHash).toBe(hashSecret(out.apiKey as string));
    expect(JSON.stringify(row)).not.toContain(out.apiKey as string);
  });

  it('apps keys create adds a key to an existing application, with an optional expiry', async () => {
    const app = await runAdmin(database.db, ['apps', 'create', '--name', 'ops']);
    const key = await runAdmin(database.db, ['apps', 'keys', 'create', '--app', String(app.applicationId), '--expires-at', '2030-01-01T00:00:00+01:00']);
    expect(key).toEqual({ keyId: expect.any(Number), applicationId: app.applicationId, apiKey: expect.stringMatching(/^pos_/), expiresAt: '2029-12-31T23:00:00.000Z' });
    expect(await findValidApiKey(database.db, hashSecret(key.apiKey as string), new Date('2029-06-01T00:00:00Z'))).toEqual({ applicationId: app.applicationId, keyId: key.keyId });
    // expired: invalid for the API, still matched by POST /logs, which ignores expiry
    expect(await findValidApiKey(database.db, hashSecret(key.apiKey as string), new Date('2031-01-01T00:00:00Z'))).toBeNull();
    expect(await findEnabledApiKeyIgnoringExpiry(database.db, hashSecret(key.apiKey as string))).not.toBeNull();
  });

  it('apps keys disable makes the key invalid everywhere', async () => {
    const app = await runAdmin(database.db, ['apps', 'create', '--name', 'temp']);
    expect(await runAdmin(database.db, ['apps', 'keys', 'disable', '--key-id', String(app.keyId)])).toEqual({ keyId: app.keyId, disabled: true });
    const hash = hashSecret(app.apiKey as string);
    expect(await findValidApiKey(database.db, hash, new Date())).toBeNull();
    expect(await findEnabledApiKeyIgnoringExpiry(database.db, hash)).toBeNull();
  });

  it('apps keys disable ends the worker sessions the key bootstrapped (decision 0082), and only those', async () => {
    const app = await runAdmin(database.db, ['apps', 'create', '--name', 'workers']);
    const applicationId = app.applicationId as number;
    const sibling = await runAdmin(database.db, ['apps', 'keys', 'create', '--app', String(applicationId)]);
    const elsewhere = await runAdmin(database.db, ['apps', 'create', '--name', 'elsewhere']);
    const now = new Date();
    const session = async (appId: number, instanceId: string, apiKeyId: number | null) => {
      const tokenHash = hashSecret(`${instanceId}-token`);
      await database.db.$transaction((tx) =>
        bootstrapWorker(tx, { applicationId: appId, instanceId, workerName: null, handlers: [], sdkVersion: null, hostname: null, metadata: null, tokenHash, apiKeyId, now, expiresAt: new Date(now.getTime() + 86_400_000) }),
      );
      return tokenHash;
    };
    const own = await session(applicationId, 'own', app.keyId as number);
    const legacy = await session(applicationId, 'legacy', null);
    const siblings = await session(applicationId, 'sibling', sibling.keyId as number);
    const foreign = await session(elsewhere.applicationId as number, 'foreign', elsewhere.keyId as number);
    await runAdmin(database.db, ['apps', 'keys', 'disable', '--key-id', String(app.keyId)]);
    const ended = async (tokenHash: string) => (await database.db.workerSession.findUniqueOrThrow({ where: { tokenHash } })).supersededAt !== null;
    // Its own session, and one from before sessions knew their key (it may be its).
    expect(await ended(own)).toBe(true);
    expect(await ended(legacy)).toBe(true);
    // Another key's session, of this application or another, lives on.
    expect(await ended(siblings)).toBe(false);
    expect(await ended(foreign)).toBe(false);
  });

  it('refuses bad usage with a message', async () => {
    await expect(runAdmin(database.db, ['apps', 'create'])).rejects.toBeInstanceOf(UsageError);
    await expect(runAdmin(database.db, ['apps', 'keys', 'create', '--app', '999999'])).rejects.toThrow(/does not exist/);
    await expect(runAdmin(database.db, ['apps', 'keys', 'create', '--app', '1', '--expires-at', '2030-01-01T00:00:00'])).rejects.toThrow(/offset/);
    await expect(runAdmin(database.db, ['apps', 'keys', 'disable', '--key-id', 'x'])).rejects.toThrow(/positive integer/);
    await expect(runAdmin(database.db, ['nope'])).rejects.toThrow(/usage/);
  });
});
