import { stageQueueName } from '@po/contracts';
import { workerCounts, type Db } from '@po/db';
import { observeWorkers } from '@po/telemetry';

/** A worker counts as healthy while its last heartbeat (or its bootstrap) is this many intervals old at most. */
export const HEALTHY_HEARTBEATS = 3;

/**
 * Worker and session gauges for GET /metrics, read from PostgreSQL on scrape: active and healthy
 * workers, current sessions, healthy workers per StageNext queue (the "no healthy worker for a
 * handler" alert pairs it with the queue depth).
 */
export function observeWorkerGauges(db: Db, heartbeatIntervalSeconds: number, clock: () => Date): void {
  observeWorkers(async () => {
    const now = clock();
    const counts = await workerCounts(db, now, new Date(now.getTime() - HEALTHY_HEARTBEATS * heartbeatIntervalSeconds * 1000));
    return {
      active: counts.active,
      healthy: counts.healthy,
      sessions: counts.sessions,
      healthyByQueue: counts.healthyByHandler.map((h) => ({ queue: stageQueueName(h.applicationId, h.handler), workers: h.workers })),
    };
  });
}
