import pg from 'pg';
import { statement, type Sql } from './sql.js';

const FIND_KEY = statement(
  'api_key_by_hash',
  'SELECT id, application_id, expires_at, disabled_at FROM api_keys WHERE key_hash = $1',
);

/** The services' settings: a valid key is looked up again after 10 s at the latest. */
export const API_KEY_CACHE: ApiKeyCacheOptions = { ttlMs: 10_000, max: 10_000 };

/** The channel the api_keys trigger notifies with the key hash on every update or delete. */
export const API_KEY_CHANNEL = 'po_api_keys';

interface Cached {
  applicationId: number;
  keyId: number;
  expiresAt: Date | null;
  cachedAt: number;
}

export interface ApiKeyCache {
  /** A valid key (matches, not disabled, not expired at `now`), or null (addendum §2). */
  resolve(keyHash: string, now: Date): Promise<{ applicationId: number; keyId: number } | null>;
  /** Resolves once the cache listens for key changes (before that it caches nothing). */
  readonly listening: Promise<void>;
  close(): Promise<void>;
}

export interface ApiKeyCacheOptions {
  /** How long a valid key is trusted without asking PostgreSQL again. */
  ttlMs: number;
  /** Keys kept at most (least recently used first out). */
  max: number;
  /** For tests: the clock of the cache entries. */
  clock?: () => number;
}

/**
 * A per-process cache of valid API keys (decision 0063): one lookup per key and TTL instead of one
 * per request. A disable (or any change) is announced by a trigger through NOTIFY at commit and
 * drops the key from every process's cache at once; the TTL bounds the damage if a notification is
 * lost, and while the listening connection is down nothing is cached at all. Expiry is checked on
 * every use. Unknown keys are never cached, so guessing cannot fill the memory.
 */
export function createApiKeyCache(sql: Sql, options: ApiKeyCacheOptions): ApiKeyCache {
  const clock = options.clock ?? Date.now;
  const entries = new Map<string, Cached>();
  // Bumped by every notification: a lookup that overlapped one is not cached (it may predate it).
  let epoch = 0;
  let listening = false;
  let closed = false;
  let listener: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let announceListening!: () => void;
  const listeningOnce = new Promise<void>((resolve) => (announceListening = resolve));

  const listen = async (): Promise<void> => {
    if (closed) return;
    const client = new pg.Client(sql.pool.options);
    client.on('notification', (n) => {
      epoch += 1;
      if (n.payload) entries.delete(n.payload);
    });
    const lost = () => {
      listening = false;
      entries.clear();
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      if (!closed) retry = setTimeout(() => void listen(), 1000);
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      await client.query(`LISTEN ${API_KEY_CHANNEL}`);
      listener = client;
      // Anything cached before listening may have changed unheard.
      entries.clear();
      epoch += 1;
      listening = true;
      announceListening();
    } catch {
      lost();
    }
  };
  void listen();

  return {
    listening: listeningOnce,
    async resolve(keyHash, now) {
      let entry = entries.get(keyHash);
      if (entry && clock() - entry.cachedAt > options.ttlMs) {
        entries.delete(keyHash);
        entry = undefined;
      }
      if (!entry) {
        const seen = epoch;
        const [row] = await sql.query<{ id: number; application_id: number; expires_at: Date | null; disabled_at: Date | null }>(FIND_KEY, [keyHash]);
        if (!row || row.disabled_at) return null;
        entry = { applicationId: row.application_id, keyId: row.id, expiresAt: row.expires_at, cachedAt: clock() };
        if (listening && seen === epoch) {
          entries.set(keyHash, entry);
          if (entries.size > options.max) entries.delete(entries.keys().next().value!);
        }
      } else {
        // Least recently used first out: a hit moves the key to the end.
        entries.delete(keyHash);
        entries.set(keyHash, entry);
      }
      if (entry.expiresAt && entry.expiresAt.getTime() <= now.getTime()) return null;
      return { applicationId: entry.applicationId, keyId: entry.keyId };
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      listening = false;
      entries.clear();
      const client = listener;
      listener = undefined;
      if (client) {
        client.removeAllListeners('end');
        await client.end().catch(() => undefined);
      }
    },
  };
}
