import { createNotifiedCache, type NotifiedCacheOptions } from './notified-cache.js';
import { statement, type Sql } from './sql.js';

const FIND_KEY = statement(
  'api_key_by_hash',
  'SELECT id, application_id, expires_at, disabled_at FROM api_keys WHERE key_hash = $1',
);

/** The services' settings: a valid key is looked up again after 10 s at the latest. */
export const API_KEY_CACHE: ApiKeyCacheOptions = { ttlMs: 10_000, max: 10_000 };

/** The channel the api_keys trigger notifies with the key hash on every update or delete. */
export const API_KEY_CHANNEL = 'po_api_keys';

export interface ApiKeyCache {
  /** A valid key (matches, not disabled, not expired at `now`), or null (addendum §2). */
  resolve(keyHash: string, now: Date): Promise<{ applicationId: number; keyId: number } | null>;
  /** Resolves once the cache listens for key changes (before that it caches nothing). */
  readonly listening: Promise<void>;
  close(): Promise<void>;
}

export type ApiKeyCacheOptions = NotifiedCacheOptions;

/**
 * A per-process cache of valid API keys (decision 0063): one lookup per key and TTL instead of one
 * per request. A disable (or any change) is announced by a trigger through NOTIFY at commit and
 * drops the key from every process's cache at once; the TTL bounds the damage if a notification is
 * lost, and while the listening connection is down nothing is cached at all. Expiry is checked on
 * every use. Unknown keys are never cached, so guessing cannot fill the memory.
 */
export function createApiKeyCache(sql: Sql, options: ApiKeyCacheOptions): ApiKeyCache {
  const cache = createNotifiedCache<{ applicationId: number; keyId: number; expiresAt: Date | null }>(sql, { drop: [API_KEY_CHANNEL] }, options);
  return {
    listening: cache.listening,
    async resolve(keyHash, now) {
      const entry = await cache.get(keyHash, async () => {
        const [row] = await sql.query<{ id: number; application_id: number; expires_at: Date | null; disabled_at: Date | null }>(FIND_KEY, [keyHash]);
        return !row || row.disabled_at ? null : { applicationId: row.application_id, keyId: row.id, expiresAt: row.expires_at };
      });
      if (!entry || (entry.expiresAt && entry.expiresAt.getTime() <= now.getTime())) return null;
      return { applicationId: entry.applicationId, keyId: entry.keyId };
    },
    close: () => cache.close(),
  };
}
