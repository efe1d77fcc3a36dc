import type { ApiKeyCache, Db, DbOrTx, Sql } from '@po/db';
import type { CursorSigner } from '@po/http';
import type { PipelineEvent, PipelineEventsProducer, StageNextDepth } from '@po/queues';
import type { Logger } from '@po/telemetry';
import type { FirstPasses } from './pipelines/first-pass.js';

/** What operations need; wired by hand in main.ts, replaced piecewise in tests. */
export interface Deps {
  db: Db;
  /** Prepared statements on the pool of `db` (hot paths, one-statement reads). */
  sql: Sql;
  /** Valid API keys, cached per process (decision 0063). */
  keys: ApiKeyCache;
  events: PipelineEventsProducer;
  /** New pipelines' first dispatcher passes, run in this process (decision 0102). */
  firstPasses: FirstPasses;
  logger: Logger;
  clock: () => Date;
  cancelTimeoutSeconds: number;
  /** Signs and verifies page cursors; its key is read from PostgreSQL once (decision 0089). */
  cursors: () => Promise<CursorSigner>;
  /** Depth of the named StageNext queues, in the order given (GET /overview). */
  queueDepths: (queues: readonly string[]) => Promise<StageNextDepth[]>;
  /** Pauses or resumes the named StageNext queue in Redis (PUT /handlers/{name}; decision 0132). */
  setQueuePaused: (queue: string, paused: boolean) => Promise<void>;
  /** Sets (null: removes) the named StageNext queue's global concurrency in Redis (a handler's maxConcurrent; decision 0132). */
  setQueueConcurrency: (queue: string, concurrency: number | null) => Promise<void>;
  /** Webhooks may target private, loopback and link-local addresses (decision 0134). */
  webhookAllowPrivateNetworks: boolean;
}

/**
 * Announces a committed change to the dispatcher. The change is already durable in PostgreSQL and
 * the dispatcher's sweep picks up anything unannounced, so a Redis outage delays dispatch by at
 * most one sweep period instead of failing a request whose effect already happened.
 */
export async function announce(deps: Deps, event: Omit<PipelineEvent, 'at'>): Promise<void> {
  try {
    await deps.events.publish(event);
  } catch (err) {
    deps.logger.warn({ err, event: event.type, pipelineId: event.pipelineId }, 'event not published; the sweep will catch up');
  }
}

/**
 * Runs reads that take several statements in one REPEATABLE READ snapshot, so together they show
 * one moment (a schedule and the runs of its health summary).
 */
export function readSnapshot<T>(deps: Deps, fn: (tx: DbOrTx) => Promise<T>): Promise<T> {
  return deps.db.$transaction((tx) => fn(tx), { isolationLevel: 'RepeatableRead' });
}
