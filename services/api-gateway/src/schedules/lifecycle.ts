import type { Schedule } from '@po/contracts';
import { lockScheduleByName, recentRuns, skipQueuedRuns, updateSchedule, type DbOrTx, type ScheduleRecord } from '@po/db';
import { HEALTH_WINDOW, NotFound, validatePlan } from '@po/domain';
import type { Deps } from '../deps.js';
import { NoFutureRun, NotPlannable, ScheduleArchived, planOf, replanFrom, unplanned } from './plan.js';
import { scheduleResponse } from './view.js';

type Change = (tx: DbOrTx, schedule: ScheduleRecord, now: Date) => Promise<ScheduleRecord>;

/** Runs `change` on the application's schedule under its row lock; 404 when there is none. */
async function changeSchedule(deps: Deps, applicationId: number, name: string, change: Change): Promise<Schedule> {
  const now = deps.clock();
  return deps.db.$transaction(async (tx) => {
    const schedule = await lockScheduleByName(tx, applicationId, name);
    if (!schedule) throw new NotFound(`Schedule "${name}" not found.`);
    const record = await change(tx, schedule, now);
    // Read under the schedule's row lock, which every writer of its runs takes first: the
    // response shows the schedule and its runs as this change left them.
    const runs = await recentRuns(tx, [record.id], HEALTH_WINDOW);
    return scheduleResponse(record, runs.get(record.id) ?? [], now);
  });
}

/**
 * POST pause (addendum §14.7): Paused, nextRunAt null, Queued runs Skipped (`paused`); Paused
 * again is unchanged; Archived is 409 schedule_archived.
 */
export function pauseSchedule(deps: Deps, applicationId: number, name: string): Promise<Schedule> {
  return changeSchedule(deps, applicationId, name, async (tx, s, now) => {
    if (s.status === 'Archived') throw new ScheduleArchived(s.name);
    if (s.status === 'Paused') return s;
    await skipQueuedRuns(tx, s.id, 'paused');
    return updateSchedule(tx, s.id, { status: 'Paused', ...unplanned(now) });
  });
}

/**
 * POST resume (addendum §14.7, first matching rule): Archived → 409 schedule_archived; a Once
 * whose runAt is not after now → 409 no_future_run; a plan that fails → 400 not_plannable;
 * Paused → Active, re-planned from now with no backlog whatever the catch-up policy; Active →
 * unchanged.
 */
export function resumeSchedule(deps: Deps, applicationId: number, name: string): Promise<Schedule> {
  return changeSchedule(deps, applicationId, name, async (tx, s, now) => {
    if (s.status === 'Archived') throw new ScheduleArchived(s.name);
    if (s.kind === 'Once' && s.runAt !== null && s.runAt.getTime() <= now.getTime()) throw new NoFutureRun(s.name);
    const problems = validatePlan(planOf(s), now, s.runAt);
    if (problems.length > 0) throw new NotPlannable(s.name, problems.map((p) => `${p.field.slice(1)} ${p.message}`).join('; '));
    const plan = replanFrom(s, now);
    if (plan.nextTickAt === null) throw new NotPlannable(s.name, 'no future tick');
    if (s.status === 'Active') return s;
    return updateSchedule(tx, s.id, { status: 'Active', ...plan });
  });
}

/** POST archive (addendum §14.7): Archived, nextRunAt null, Queued runs Skipped (`archived`); again → unchanged. */
export function archiveSchedule(deps: Deps, applicationId: number, name: string): Promise<Schedule> {
  return changeSchedule(deps, applicationId, name, async (tx, s, now) => {
    if (s.status === 'Archived') return s;
    await skipQueuedRuns(tx, s.id, 'archived');
    return updateSchedule(tx, s.id, { status: 'Archived', ...unplanned(now) });
  });
}
