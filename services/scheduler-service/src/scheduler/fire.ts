import { enqueueWebhookEvent, lockDueSchedules, lockSchedule, oldestQueuedRun, queryableOf, scheduleDefinition, scheduleOverlap, schedulesWithQueuedRuns, unfinishedPipelines, type DbOrTx, type Queryable, type SchedulePlanRecord } from '@po/db';
import { cancelPipeline as cancelPipelineInTransaction, fireScheduleTicks, type FireOutcome, type ScheduleFire, type TickOutcome } from '@po/engine';
import type { OverlapPolicy } from '@po/domain';
import { announceAll, createdAnnouncement, type Announcement, type SchedulerDeps } from './deps.js';
import { dueTicks, replanFrom } from './due-ticks.js';
import { recordFired, recordPromoted } from './observe.js';
import { planDefinition } from './plan-cache.js';

export type { TickOutcome } from '@po/engine';

const TX_OPTIONS = { timeout: 60_000, maxWait: 10_000 };

export interface FireResult {
  scheduleId: number;
  outcomes: TickOutcome[];
  missed: number;
}

/** A fire transaction failed; its schedules are unlocked again and were not changed. */
export class FireFailed extends Error {
  constructor(
    readonly scheduleIds: number[],
    cause: unknown,
  ) {
    super(`firing schedules ${scheduleIds.join(', ') || '(none locked)'} failed`, { cause });
  }
}

/** After commit: metrics (so a batch rolled back and retried is counted once) and the missed-ticks log. */
export function recordCommitted(deps: SchedulerDeps, results: readonly FireResult[], lagsMs: readonly number[]): void {
  recordFired(results.flatMap((r) => r.outcomes), lagsMs);
  for (const r of results) {
    if (r.missed > 0) deps.logger.info({ scheduleId: r.scheduleId, missed: r.missed, catchupRuns: r.outcomes.length }, 'missed ticks');
  }
}

/**
 * In the firing transaction: a `schedule.run_missed` webhook event for each schedule whose ticks
 * were missed (decision 0134), written to the outbox with the runs, or not at all.
 */
export async function enqueueMissedRunEvents(q: Queryable, fired: FireOutcome['fired'], missed: ReadonlyMap<number, number>): Promise<void> {
  for (const { fire, ticks } of fired) {
    const missedTicks = missed.get(fire.schedule.id) ?? 0;
    if (missedTicks === 0) continue;
    const s = fire.schedule;
    await enqueueWebhookEvent(q, s.applicationId, 'schedule.run_missed', {
      scheduleId: s.id,
      scheduleName: s.name,
      missedTicks,
      catchupRuns: ticks.filter((t) => t.trigger === 'Catchup').length,
    });
  }
}

/** What each fired schedule's ticks did, with how many of its ticks were missed. */
export function resultsOf(fired: FireOutcome['fired'], missed: ReadonlyMap<number, number>): FireResult[] {
  return fired.map(({ fire, ticks }) => ({ scheduleId: fire.schedule.id, outcomes: ticks.map((t) => t.outcome), missed: missed.get(fire.schedule.id) ?? 0 }));
}

/** The events of fired ticks, published after commit, in the order they happened: each tick's cancellations, then its pipeline. */
export function firedAnnouncements(fired: FireOutcome['fired']): Announcement[] {
  const out: Announcement[] = [];
  for (const { fire, ticks } of fired) {
    for (const tick of ticks) {
      for (const pipelineId of tick.cancelled) out.push({ type: 'pipeline.cancelled', applicationId: fire.schedule.applicationId, pipelineId });
      if (tick.pipeline) out.push(createdAnnouncement(fire.schedule, tick.pipeline.id, tick.pipeline.traceId, tick.pipeline.createdAt));
    }
  }
  return out;
}

/**
 * The guarded way of firing one schedule (fireScheduleTicks with `isolate` and `skipFired`), in the
 * caller's Prisma transaction, which holds the schedule's row lock: a tick that already has a run is
 * not fired again, a creation the database refuses becomes Failed runs, and Replace cancels as POST
 * cancel does.
 */
async function fireGuarded(
  tx: DbOrTx,
  deps: SchedulerDeps,
  schedule: SchedulePlanRecord,
  fire: Pick<ScheduleFire, 'ticks' | 'plan' | 'open' | 'queued'>,
  now: Date,
): Promise<FireOutcome> {
  return fireScheduleTicks(
    queryableOf(tx),
    [
      {
        schedule,
        rules: { policy: schedule.overlapPolicy as OverlapPolicy, catchupMax: schedule.catchupMax },
        ...fire,
        definition: async () => planDefinition(schedule, await scheduleDefinition(tx, schedule.id)),
      },
    ],
    { now, clock: deps.clock, cancel: (pipelineId) => cancelPipelineInTransaction(tx, pipelineId, now), isolate: true, skipFired: true },
  );
}

/**
 * Fires one due schedule in guarded mode, in its own transaction (the fallback of the set-based
 * batch in fire-batch.ts, and the path of what it defers): the row is locked with SKIP LOCKED, its
 * due ticks fire through fireGuarded, the advanced plan commits with them, and events are published
 * after commit. Null when the schedule is not due (or another transaction holds it).
 */
export async function fireScheduleGuarded(deps: SchedulerDeps, scheduleId: number): Promise<FireResult | null> {
  const now = deps.clock();
  let outcome: { fired: FireOutcome['fired']; missed: number } | null;
  try {
    outcome = await deps.db.$transaction(async (tx) => {
      const [schedule] = await lockDueSchedules(tx, now, { limit: 1, only: [scheduleId] });
      if (!schedule) return null;
      const due = dueTicks(schedule, now, deps.misfireGraceSeconds);
      // Due without a next tick (a stale plan): nothing to fire, plan again from now.
      const fire = due
        ? {
            ticks: [...due.catchup.map((tick) => ({ tick, trigger: 'Catchup' as const })), ...due.scheduled.map((tick) => ({ tick, trigger: 'Scheduled' as const }))],
            plan: { planAnchor: due.anchor, nextTickAt: due.nextTickAt, nextRunAt: due.nextRunAt, handledThrough: due.handledThrough },
            ...(await scheduleOverlap(tx, schedule.id, schedule.overlapPolicy)),
          }
        : { ticks: [], plan: replanFrom(schedule, now), open: 0, queued: 0 };
      const { fired } = await fireGuarded(tx, deps, schedule, fire, now);
      await enqueueMissedRunEvents(queryableOf(tx), fired, new Map([[scheduleId, due?.missed ?? 0]]));
      return { fired, missed: due?.missed ?? 0 };
    }, TX_OPTIONS);
  } catch (err) {
    throw new FireFailed([scheduleId], err);
  }
  if (outcome === null) return null;
  await announceAll(deps, firedAnnouncements(outcome.fired));
  const [result] = resultsOf(outcome.fired, new Map([[scheduleId, outcome.missed]]));
  const lagsMs = outcome.fired.flatMap((f) => f.ticks.filter((t) => t.trigger === 'Scheduled').map((t) => now.getTime() - t.tick.getTime()));
  recordCommitted(deps, result ? [result] : [], lagsMs);
  return result ?? { scheduleId, outcomes: [], missed: outcome.missed };
}

/**
 * Queue (addendum §14.5): once no pipeline of a schedule is unfinished, its oldest Queued run gets
 * its pipeline and becomes Created (or Failed). One at a time: its pipeline is the new overlap.
 */
export async function promoteQueuedRuns(deps: SchedulerDeps, limit = 200): Promise<number> {
  let promoted = 0;
  for (const scheduleId of await schedulesWithQueuedRuns(deps.db, limit)) {
    const fired = await deps.db.$transaction(async (tx) => {
      const schedule = await lockSchedule(tx, scheduleId, true);
      if (!schedule || schedule.status !== 'Active') return null;
      const open = (await unfinishedPipelines(tx, [scheduleId])).get(scheduleId) ?? [];
      const run = open.length > 0 ? null : await oldestQueuedRun(tx, scheduleId);
      if (!run) return null;
      // Nothing open: planTicks creates, whatever the policy.
      const tick = { trigger: run.trigger, tick: run.scheduledFor, run: run.id };
      return (await fireGuarded(tx, deps, schedule, { ticks: [tick], open, queued: 0 }, deps.clock())).fired;
    }, TX_OPTIONS);
    if (!fired) continue;
    await announceAll(deps, firedAnnouncements(fired));
    promoted += 1;
  }
  recordPromoted(promoted);
  return promoted;
}
