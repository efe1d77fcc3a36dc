import {
  advanceSchedules,
  insertRuns,
  lockDueSchedules,
  lockSchedule,
  queuedRunCounts,
  schedulesWithQueuedRuns,
  unfinishedPipelines,
  type NewRun,
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

export interface FireOptions {
  /** Schedules per transaction. */
  limit: number;
  guarded: boolean;
  /** Schedules not to take (this pass gave up on them). */
  exclude?: ReadonlySet<number>;
  /** Take only these schedules (when due). */
  only?: readonly number[];
}

/**
 * Fires due schedules in one transaction (addendum §14.3–§14.6). The schedule rows are locked with
 * SKIP LOCKED, so replicas never handle a schedule at the same time; the unique (schedule_id,
 * tick) of runs is the second guard, so a tick fires at most once even on a stale plan; the runs,
 * their pipelines, the cancellations of Replace and the advanced plans (planAnchor, nextTickAt,
 * nextRunAt) commit together, and events are published after commit. Null when nothing is due.
 * The batch is locked without definitions; each schedule reads its own when a tick creates a
 * pipeline, so a transaction holds one definition at a time, not `limit` of them.
 */
export async function fireDueSchedules(deps: SchedulerDeps, options: FireOptions): Promise<FireResult[] | null> {
  const now = deps.clock();
  const announcements: Announcement[] = [];
  const locked: number[] = [];
  const lagsMs: number[] = [];
  let results: FireResult[] | null;
  try {
    results = await deps.db.$transaction(async (tx) => {
      const schedules = await lockDueSchedules(tx, now, { limit: options.limit, exclude: [...(options.exclude ?? [])], ...(options.only ? { only: options.only } : {}) });
      if (schedules.length === 0) return null;
      locked.push(...schedules.map((s) => s.id));
      const open = await unfinishedPipelines(tx, locked);
      const queueing = schedules.filter((s) => s.overlapPolicy === 'Queue').map((s) => s.id);
      const queued = queueing.length > 0 ? await queuedRunCounts(tx, queueing) : new Map<number, number>();
      const runs: NewRun[] = [];
      const plans: ({ scheduleId: number } & SchedulePlanWrite)[] = [];
      const fired: FireResult[] = [];
      for (const schedule of schedules) {
        const ctx: FireContext = { tx, schedule, now, clock: deps.clock, guarded: options.guarded, open: open.get(schedule.id) ?? [], queued: queued.get(schedule.id) ?? 0, runs, announcements };
        const due = dueTicks(schedule, now, deps.misfireGraceSeconds);
        if (due === null) {
          // Due without a next tick (a stale plan): nothing to fire, plan again from now.
          plans.push({ scheduleId: schedule.id, ...replanFrom(schedule, now) });
          fired.push({ scheduleId: schedule.id, outcomes: [], missed: 0 });
          continue;
        }
        const outcomes: TickOutcome[] = [];
        for (const tick of due.catchup) outcomes.push(await fireTick(ctx, tick, 'Catchup'));
        for (const tick of due.scheduled) {
          lagsMs.push(now.getTime() - tick.getTime());
          outcomes.push(await fireTick(ctx, tick, 'Scheduled'));
        }
        plans.push({ scheduleId: schedule.id, planAnchor: due.anchor, nextTickAt: due.nextTickAt, nextRunAt: due.nextRunAt, handledThrough: due.handledThrough });
        fired.push({ scheduleId: schedule.id, outcomes, missed: due.missed });
      }
      await insertRuns(tx, runs);
      await advanceSchedules(tx, plans);
      return fired;
    }, TX_OPTIONS);
  } catch (err) {
    throw new FireFailed(locked, err);
  }
  await announceAll(deps, announcements);
  recordFired((results ?? []).flatMap((r) => r.outcomes), lagsMs);
  for (const r of results ?? []) {
    if (r.missed > 0) deps.logger.info({ scheduleId: r.scheduleId, missed: r.missed, catchupRuns: r.outcomes.length }, 'missed ticks');
  }
  return results;
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
      return promoteQueuedRun({ tx, schedule, now: deps.clock(), clock: deps.clock, guarded: true, open, queued: 0, runs: [], announcements });
    }, TX_OPTIONS);
    await announceAll(deps, announcements);
    if (done) promoted += 1;
  }
  recordPromoted(promoted);
  return promoted;
}
