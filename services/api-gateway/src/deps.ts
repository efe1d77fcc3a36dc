import type { Db } from '@po/db';
import type { PipelineEvent, PipelineEventsProducer } from '@po/queues';
import type { Logger } from '@po/telemetry';

/** What operations need; wired by hand in main.ts, replaced piecewise in tests. */
export interface Deps {
  db: Db;
  events: PipelineEventsProducer;
  logger: Logger;
  clock: () => Date;
  cancelTimeoutSeconds: number;
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
