import type { ApiKeyCache, Db, LiveSession, NotifiedCache } from '@po/db';
import type { StageResultsProducer } from '@po/queues';
import type { Logger } from '@po/telemetry';
import type { WorkerGatewayConfig } from './config.js';

export interface Deps {
  db: Db;
  /** Valid API keys, cached per process (decision 0063). */
  keys: ApiKeyCache;
  /** Live worker sessions by token hash, cached per process (decision 0099). */
  sessions: NotifiedCache<LiveSession>;
  results: StageResultsProducer;
  /**
   * Whether the connection pulls fetch on is up and Redis answers on it (broker-watch.ts). While
   * Redis is away or silent a pull answers 503 at once instead of waiting out its long poll on a
   * fetch that cannot answer (decision 0120).
   */
  brokerReady: () => boolean;
  logger: Logger;
  clock: () => Date;
  config: WorkerGatewayConfig;
}
