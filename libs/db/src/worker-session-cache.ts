import { API_KEY_CHANNEL } from './api-key-cache.js';
import { createNotifiedCache, type NotifiedCache, type NotifiedCacheOptions } from './notified-cache.js';
import type { Sql } from './sql.js';

/** The channel the worker_sessions trigger notifies with the token hash when a session ends or changes. */
export const WORKER_SESSION_CHANNEL = 'po_worker_sessions';

/** A current session whose key was valid when read; it holds until `validUntil` unless announced. */
export interface LiveSession {
  workerId: string;
  applicationId: number;
  /** The earlier of the session's and its key's expiry. */
  validUntil: Date;
}

/** The worker-gateway's settings: a live session is read again after 10 s at the latest. */
export const WORKER_SESSION_CACHE: NotifiedCacheOptions = { ttlMs: 10_000, max: 10_000 };

/**
 * Live worker sessions by token hash (decision 0099), filled by the caller's own read. A session
 * superseded, changed or deleted is dropped by its NOTIFY; any API-key change empties the cache
 * (a key's notification names the key, not its sessions). Expiry is the caller's check, on every use.
 */
export function createWorkerSessionCache(sql: Sql, options: NotifiedCacheOptions): NotifiedCache<LiveSession> {
  return createNotifiedCache<LiveSession>(sql, { drop: [WORKER_SESSION_CHANNEL], clear: [API_KEY_CHANNEL] }, options);
}
