import type { Sql } from './sql.js';

export interface NotifiedCacheOptions {
  /** How long an entry is trusted without asking PostgreSQL again. */
  ttlMs: number;
  /** Entries kept at most (least recently used first out). */
  max: number;
  /** For tests: the clock of the entries. */
  clock?: () => number;
}

export interface NotifiedCache<T> {
  /** The cached value of `key`, or what `load` finds (cached only when not null). */
  get(key: string, load: () => Promise<T | null>): Promise<T | null>;
  /** Resolves once the cache listens (before that it caches nothing). */
  readonly listening: Promise<void>;
  close(): Promise<void>;
}

/**
 * A per-process cache of rows that triggers announce through NOTIFY at commit (decisions 0063,
 * 0099). A notification on a `drop` channel removes the entry named by its payload; one on a
 * `clear` channel empties the cache (the payload names something the entries cannot be found by).
 * A load that overlapped any notification is not cached, the TTL bounds the damage of a lost one,
 * and while the process's listening session (`sql.notifications`) is down nothing is cached at
 * all. Misses are never cached, so guessing keys cannot fill the memory.
 */
export function createNotifiedCache<T>(
  sql: Sql,
  channels: { drop: string[]; clear?: string[] },
  options: NotifiedCacheOptions,
): NotifiedCache<T> {
  const clock = options.clock ?? Date.now;
  const entries = new Map<string, { value: T; cachedAt: number }>();
  const clearing = new Set(channels.clear ?? []);
  // Bumped by every notification: a load that overlapped one is not cached (it may predate it).
  let epoch = 0;
  let listening = false;
  let announceListening!: () => void;
  const listeningOnce = new Promise<void>((resolve) => (announceListening = resolve));

  const unsubscribe = sql.notifications.subscribe([...channels.drop, ...clearing], {
    notify(channel, payload) {
      epoch += 1;
      if (clearing.has(channel)) entries.clear();
      else if (payload) entries.delete(payload);
    },
    listening(on) {
      // Anything cached before listening may have changed unheard, and nothing is heard while down.
      entries.clear();
      epoch += 1;
      listening = on;
      if (on) announceListening();
    },
  });

  return {
    listening: listeningOnce,
    async get(key, load) {
      const entry = entries.get(key);
      if (entry && clock() - entry.cachedAt <= options.ttlMs) {
        // Least recently used first out: a hit moves the key to the end.
        entries.delete(key);
        entries.set(key, entry);
        return entry.value;
      }
      if (entry) entries.delete(key);
      const seen = epoch;
      const value = await load();
      if (value !== null && listening && seen === epoch) {
        entries.set(key, { value, cachedAt: clock() });
        if (entries.size > options.max) entries.delete(entries.keys().next().value!);
      }
      return value;
    },
    async close() {
      unsubscribe();
      listening = false;
      entries.clear();
    },
  };
}
