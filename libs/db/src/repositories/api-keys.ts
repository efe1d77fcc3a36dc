import type { DbOrTx } from '../db-types.js';

export interface ValidKey {
  applicationId: number;
  keyId: number;
}

/** A key is valid when its hash matches, it is not disabled and not expired (addendum §2). */
export async function findValidApiKey(db: DbOrTx, keyHash: string, now: Date): Promise<ValidKey | null> {
  const key = await db.apiKey.findUnique({ where: { keyHash } });
  if (!key || key.disabledAt || (key.expiresAt && key.expiresAt <= now)) return null;
  return { applicationId: key.applicationId, keyId: key.id };
}

/** POST /logs checks only "matches and not disabled"; expiry is ignored there (addendum §2). */
export async function findEnabledApiKeyIgnoringExpiry(db: DbOrTx, keyHash: string): Promise<ValidKey | null> {
  const key = await db.apiKey.findUnique({ where: { keyHash } });
  if (!key || key.disabledAt) return null;
  return { applicationId: key.applicationId, keyId: key.id };
}

export async function createApplication(db: DbOrTx, name: string): Promise<{ id: number; name: string }> {
  const app = await db.application.create({ data: { name } });
  return { id: app.id, name: app.name };
}

export async function createApiKey(
  db: DbOrTx,
  input: { applicationId: number; keyHash: string; expiresAt: Date | null },
): Promise<{ id: number; expiresAt: Date | null }> {
  const key = await db.apiKey.create({ data: input });
  return { id: key.id, expiresAt: key.expiresAt };
}

export async function applicationExists(db: DbOrTx, applicationId: number): Promise<boolean> {
  return (await db.application.count({ where: { id: applicationId } })) > 0;
}

/** Returns null when no such key exists. Disabling twice keeps the first timestamp. */
export async function disableApiKey(db: DbOrTx, keyId: number, now: Date): Promise<{ applicationId: number } | null> {
  const key = await db.apiKey.findUnique({ where: { id: keyId } });
  if (!key) return null;
  if (!key.disabledAt) await db.apiKey.update({ where: { id: keyId }, data: { disabledAt: now } });
  return { applicationId: key.applicationId };
}
