import { lockDueSchedule, lockSchedule, schedulesWithQueuedRuns, updateSchedule } from '@po/db';
import { announceAll, type Announcement, type SchedulerDeps } from './deps.js';
import { dueTicks, replanFrom } from './due-ticks.js';
import { fireTick, promoteQueuedRun, type FireContext, type TickOutcome } from './create-run.js';

const TX_OPTIONS = { timeout: 60_000, maxWait: 10_000 };

export interface FireResult {
  scheduleId: number;
  outcomes: TickOutcome[];
  missed: number;
}

/**
 * Handles the due schedule that is due first, in one transaction (addendum §14.3–§14.6): the
 * schedule row is locked with SKIP LOCKED, so replicas never handle the same schedule at once;
 * each tick is claimed through the unique (schedule_id, tick) of its run, so a tick fires at most
 * once even if two passes saw the same state; the runs, their pipelines, the cancellations of
 * Replace and the advanced plan (planAnchor, nextTickAt, nextRunAt) commit together.
 * Returns null when nothing is due. `exclude` holds schedules this pass already failed on.
 */
export async function fireNextDueSchedule(deps: SchedulerDeps, exclude: ReadonlySet<number> = new Set()): Promise<FireResult | null> {
  const now = deps.clock();
  const announcements: Announcement[] = [];
  const attempt: { scheduleId: number | null } = { scheduleId: null };
  try {
    const result = await deps.db.$transaction(async (tx): Promise<FireResult | null> => {
      const schedule = await lockDueSchedule(tx, now, [...exclude]);
      if (!schedule) return null;
      attempt.scheduleId = schedule.id;
      const ctx: FireContext = { tx, schedule, now, announcements };
      const due = dueTicks(schedule, now, deps.misfireGraceSeconds);
      if (due === null) {
        // Due without a next tick: nothing to fire; plan again from now.
        await updateSchedule(tx, schedule.id, replanFrom(schedule, now));
        return { scheduleId: schedule.id, outcomes: [], missed: 0 };
      }
      await promoteQueuedRun(ctx);
      const outcomes: TickOutcome[] = [];
      for (const tick of due.catchup) outcomes.push(await fireTick(ctx, tick, 'Catchup'));
      for (const tick of due.scheduled) outcomes.push(await fireTick(ctx, tick, 'Scheduled'));
      await updateSchedule(tx, schedule.id, { planAnchor: due.anchor, nextTickAt: due.nextTickAt, nextRunAt: due.nextRunAt });
      return { scheduleId: schedule.id, outcomes, missed: due.missed };
    }, TX_OPTIONS);
    await announceAll(deps, announcements);
    if (result && result.missed > 0) deps.logger.info({ scheduleId: result.scheduleId, missed: result.missed, catchup: result.outcomes.length }, 'missed ticks');
    return result;
  } catch (err) {
    throw Object.assign(new Error(`firing schedule ${attempt.scheduleId ?? '?'} failed`, { cause: err }), { scheduleId: attempt.scheduleId });
  }
}

/** Gives Queued runs their pipeline where the schedule has no unfinished pipeline any more. */
export async function promoteQueuedRuns(deps: SchedulerDeps, limit = 200): Promise<number> {
  let promoted = 0;
  for (const scheduleId of await schedulesWithQueuedRuns(deps.db, limit)) {
    const announcements: Announcement[] = [];
    const done = await deps.db.$transaction(async (tx) => {
      const schedule = await lockSchedule(tx, scheduleId, true);
      if (!schedule || schedule.status !== 'Active') return false;
      return promoteQueuedRun({ tx, schedule, now: deps.clock(), announcements });
    }, TX_OPTIONS);
    await announceAll(deps, announcements);
    if (done) promoted += 1;
  }
  return promoted;
}
