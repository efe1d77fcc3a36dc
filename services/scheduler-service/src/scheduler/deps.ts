import type { Db, SchedulePlanRecord } from '@po/db';
import type { PipelineEvent, PipelineEventsProducer } from '@po/queues';
import { ATTR_SCHEDULE_NAME, startPipelineSpan, traceparentOf, tracingEnabled, type Logger } from '@po/telemetry';
import type { PlanCache } from './plan-cache.js';

/** What the scheduler's operations need; wired by hand in main.ts, replaced piecewise in tests. */
export interface SchedulerDeps {
  db: Db;
  events: PipelineEventsProducer;
  logger: Logger;
  /** The scheduler's notion of now: ticks are due when their fire time is not after it. */
  clock: () => Date;
  /** SCHEDULER_MISFIRE_GRACE_SECONDS. */
  misfireGraceSeconds: number;
  /** Planned definitions of the process (main.ts makes one); without it, one per `db` (planCacheOf). */
  plans?: PlanCache;
}

export type Announcement = Omit<PipelineEvent, 'at'>;

/**
 * The pipeline.created announcement of a scheduled pipeline. With tracing on, the pipeline's trace
 * opens with a `schedule.fire` span (its stages' spans are its children), linked from the event.
 */
export function createdAnnouncement(schedule: Pick<SchedulePlanRecord, 'applicationId' | 'name'>, pipelineId: number, traceId: string, at: Date): Announcement {
  const span = tracingEnabled()
    ? startPipelineSpan('schedule.fire', { traceId, applicationId: schedule.applicationId, id: pipelineId }, at.getTime(), { [ATTR_SCHEDULE_NAME]: schedule.name })
    : undefined;
  span?.end();
  return { type: 'pipeline.created', applicationId: schedule.applicationId, pipelineId, traceparent: span && traceparentOf(span) };
}

/**
 * Publishes committed changes to the dispatcher, in one round trip to Redis. The pipelines are
 * already due for dispatch in PostgreSQL (dispatch_requested_at), so lost events only delay them
 * by one dispatcher sweep.
 */
export async function announceAll(deps: SchedulerDeps, events: readonly Announcement[]): Promise<void> {
  if (events.length === 0) return;
  try {
    await deps.events.publishMany(events);
  } catch (err) {
    deps.logger.warn({ err, events: events.length, pipelineIds: events.slice(0, 10).map((e) => e.pipelineId) }, 'events not published; the sweep will catch up');
  }
}

/**
 * The announcements of a pass's batches, published once the batches are done (or whenever
 * `flushAt` of them wait): during a burst the batches commit first, and the events — one BullMQ
 * job each, a fair share of this process's CPU — follow. The pipelines are due for dispatch from
 * their commit on (dispatch_requested_at), so holding an event back a batch or two only delays
 * the dispatcher's early wake-up, and keeps its passes from competing with the burst.
 */
export class PendingAnnouncements {
  private pending: Announcement[] = [];
  private readonly inFlight: Promise<void>[] = [];

  constructor(
    private readonly deps: SchedulerDeps,
    private readonly flushAt = 1000,
  ) {}

  add(events: readonly Announcement[]): void {
    this.pending.push(...events);
    if (this.pending.length >= this.flushAt) this.flush();
  }

  /** Starts publishing what waits (announceAll never rejects). */
  flush(): void {
    if (this.pending.length === 0) return;
    this.inFlight.push(announceAll(this.deps, this.pending));
    this.pending = [];
  }

  /** Publishes what waits and waits for every publication. */
  async settle(): Promise<void> {
    this.flush();
    await Promise.all(this.inFlight.splice(0));
  }
}
