import {
  advanceSchedules,
  lockDueSchedules,
  lockSchedule,
  queuedRunCounts,
  schedulesWithQueuedRuns,
  unfinishedPipelines,
  type SchedulePlanWrite,
} from '@po/db';
import { announceAll, type Announcement, type SchedulerDeps } from './deps.js';
import { dueTicks, replanFrom } from './due-ticks.js';
import { fireTick, promoteQueuedRun, type FireContext, type TickOutcome } from './create-run.js';
import { recordFired, recordPromoted } from './observe.js';

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
 * Fires one due schedule in guarded mode, in its own transaction (the fallback of the set-based
 * batch in fire-batch.ts, and the path of what it defers): the row is locked with SKIP LOCKED;
 * each tick claims its run first (unique schedule_id, tick: a tick fires at most once, even on a
 * stale plan) and creates its pipeline under a savepoint, so a failing creation becomes a Failed
 * run; Replace cancels as POST cancel does; the advanced plan commits with them, and events are
 * published after commit. Null when the schedule is not due (or another transaction holds it).
 */
export async function fireScheduleGuarded(deps: SchedulerDeps, scheduleId: number): Promise<FireResult | null> {
  const now = deps.clock();
  const announcements: Announcement[] = [];
  const lagsMs: number[] = [];
  let result: FireResult | null;
  try {
    result = await deps.db.$transaction(async (tx) => {
      const [schedule] = await lockDueSchedules(tx, now, { limit: 1, only: [scheduleId] });
      if (!schedule) return null;
      const due = dueTicks(schedule, now, deps.misfireGraceSeconds);
      if (due === null) {
        // Due without a next tick (a stale plan): nothing to fire, plan again from now.
        await advanceSchedules(tx, [{ scheduleId, ...replanFrom(schedule, now) }]);
        return { scheduleId, outcomes: [], missed: 0 };
      }
      const open = (await unfinishedPipelines(tx, [scheduleId])).get(scheduleId) ?? [];
      const queued = schedule.overlapPolicy === 'Queue' ? ((await queuedRunCounts(tx, [scheduleId])).get(scheduleId) ?? 0) : 0;
      const ctx: FireContext = { tx, schedule, now, clock: deps.clock, open, queued, announcements };
      const outcomes: TickOutcome[] = [];
      for (const tick of due.catchup) outcomes.push(await fireTick(ctx, tick, 'Catchup'));
      for (const tick of due.scheduled) {
        lagsMs.push(now.getTime() - tick.getTime());
        outcomes.push(await fireTick(ctx, tick, 'Scheduled'));
      }
      const plan: SchedulePlanWrite = { planAnchor: due.anchor, nextTickAt: due.nextTickAt, nextRunAt: due.nextRunAt, handledThrough: due.handledThrough };
      await advanceSchedules(tx, [{ scheduleId, ...plan }]);
      return { scheduleId, outcomes, missed: due.missed };
    }, TX_OPTIONS);
  } catch (err) {
    throw new FireFailed([scheduleId], err);
  }
  await announceAll(deps, announcements);
  if (result) recordCommitted(deps, [result], lagsMs);
  return result;
}

/** Gives Queued runs their pipeline where the schedule has no unfinished pipeline any more. */
export async function promoteQueuedRuns(deps: SchedulerDeps, limit = 200): Promise<number> {
  let promoted = 0;
  for (const scheduleId of await schedulesWithQueuedRuns(deps.db, limit)) {
    const announcements: Announcement[] = [];
    const done = await deps.db.$transaction(async (tx) => {
      const schedule = await lockSchedule(tx, scheduleId, true);
      if (!schedule || schedule.status !== 'Active') return false;
      const open = (await unfinishedPipelines(tx, [scheduleId])).get(scheduleId) ?? [];
      return promoteQueuedRun({ tx, schedule, now: deps.clock(), clock: deps.clock, open, queued: 0, announcements });
    }, TX_OPTIONS);
    await announceAll(deps, announcements);
    if (done) promoted += 1;
  }
  recordPromoted(promoted);
  return promoted;
}
