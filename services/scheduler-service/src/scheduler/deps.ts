import type { Db } from '@po/db';
import type { PipelineEvent, PipelineEventsProducer } from '@po/queues';
import type { Logger } from '@po/telemetry';

/** What the scheduler's operations need; wired by hand in main.ts, replaced piecewise in tests. */
export interface SchedulerDeps {
  db: Db;
  events: PipelineEventsProducer;
  logger: Logger;
  /** The scheduler's notion of now: ticks are due when their fire time is not after it. */
  clock: () => Date;
  /** SCHEDULER_MISFIRE_GRACE_SECONDS. */
  misfireGraceSeconds: number;
}

export type Announcement = Omit<PipelineEvent, 'at'>;

/**
 * Publishes committed changes to the dispatcher. The pipelines are already due for dispatch in
 * PostgreSQL (dispatch_requested_at), so a lost event only delays them by one dispatcher sweep.
 */
export async function announceAll(deps: SchedulerDeps, events: readonly Announcement[]): Promise<void> {
  await Promise.all(
    events.map(async (event) => {
      try {
        await deps.events.publish(event);
      } catch (err) {
        deps.logger.warn({ err, event: event.type, pipelineId: event.pipelineId }, 'event not published; the sweep will catch up');
      }
    }),
  );
}
