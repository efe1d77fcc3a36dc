import {
  isMissed,
  jitteredFireAt,
  nextTick,
  selectCatchup,
  ticksBetween,
  type CatchupPolicy,
  type PlanInput,
} from '@po/domain';
import type { ScheduleRecord } from '@po/db';

/** The plan of a stored schedule, as the domain's planning functions take it. */
export function planOf(s: Pick<ScheduleRecord, 'kind' | 'cronExpression' | 'intervalSeconds' | 'runAt' | 'timeZone'>): PlanInput {
  return { kind: s.kind, cronExpression: s.cronExpression, intervalSeconds: s.intervalSeconds, runAt: s.runAt, timeZone: s.timeZone };
}

export const fireAt = jitteredFireAt;

/** Planned ticks a fire pass handles, and where the plan goes on from. */
export interface DueTicks {
  /** Missed ticks that get a Catchup run (catch-up policy applied), ascending. */
  catchup: Date[];
  /** Ticks handled within the misfire grace: they fire normally, ascending. */
  scheduled: Date[];
  /** How many ticks were missed in all (including those the policy drops). */
  missed: number;
  /** The last tick handled: the new reference (and Interval anchor) of the plan. */
  anchor: Date;
  /** The next unhandled tick, unjittered, and its fire time; null when nothing is left. */
  nextTickAt: Date | null;
  nextRunAt: Date | null;
  /** Ticks after nextTickAt whose fire time is not after this were handled by this pass. */
  handledThrough: Date | null;
}

type DueInput = Pick<
  ScheduleRecord,
  'id' | 'kind' | 'cronExpression' | 'intervalSeconds' | 'runAt' | 'timeZone' | 'planAnchor' | 'nextTickAt' | 'jitterSeconds' | 'catchupPolicy' | 'catchupMax'
>;

/** Upper bound of ticks walked one by one; the stretch before them is counted in bulk. */
const MAX_WALK = 100_000;

/**
 * The ticks of a due schedule at `now` (addendum §14.3, §14.4, §14.6): starting with the stored
 * next tick, every tick whose fire time (tick + jitter) is not after `now`. A tick whose fire
 * time is more than `graceSeconds` before `now` is missed; of a stretch of missed ticks the
 * catch-up policy keeps none, the latest, or the latest `catchupMax`. Ticks long past (before
 * now − grace − max jitter) are certainly missed and are counted without being walked, so an
 * outage of any length costs the same. The plan goes on with the first tick not yet due.
 * Null when the schedule has no stored next tick.
 */
export function dueTicks(s: DueInput, now: Date, graceSeconds: number): DueTicks | null {
  const first = s.nextTickAt;
  if (first === null) return null;
  const plan = planOf(s);
  const policy = s.catchupPolicy as CatchupPolicy;
  const keep = Math.max(1, s.catchupMax);

  // Certainly missed: t + jitter <= t + maxJitter < now - grace.
  const certainlyMissedUntil = new Date(now.getTime() - graceSeconds * 1000 - s.jitterSeconds * 1000 - 1);
  const bulk =
    first <= certainlyMissedUntil
      ? ticksBetween(plan, s.planAnchor, new Date(first.getTime() - 1), certainlyMissedUntil, keep)
      : { ticks: [], total: 0 };
  const missed = [...bulk.ticks];
  let missedTotal = bulk.total;
  let anchor: Date | null = bulk.ticks[bulk.ticks.length - 1] ?? null;

  const scheduled: Date[] = [];
  let tick: Date | null = anchor === null ? first : nextTick(plan, s.planAnchor, anchor);
  for (let walked = 0; tick !== null && tick <= now && walked < MAX_WALK; walked++) {
    const fire = fireAt(s.id, tick, s.jitterSeconds);
    if (fire > now) break;
    if (isMissed(fire, now, graceSeconds)) {
      missed.push(tick);
      missedTotal += 1;
    } else {
      scheduled.push(tick);
    }
    anchor = tick;
    tick = nextTick(plan, s.planAnchor, tick);
  }
  if (anchor === null) return null;
  return {
    catchup: selectCatchup(missed.slice(-keep), policy, s.catchupMax),
    scheduled,
    missed: missedTotal,
    anchor,
    nextTickAt: tick,
    nextRunAt: tick === null ? null : fireAt(s.id, tick, s.jitterSeconds),
    handledThrough: null,
  };
}

/** A (re)plan from `now` (creation, behaviour-changing PUT, resume): reference and anchor are now. */
export function replanFrom(s: Pick<ScheduleRecord, 'id' | 'kind' | 'cronExpression' | 'intervalSeconds' | 'runAt' | 'timeZone' | 'jitterSeconds'>, now: Date) {
  const next = nextTick(planOf(s), now, now);
  return { planAnchor: now, nextTickAt: next, nextRunAt: next === null ? null : fireAt(s.id, next, s.jitterSeconds), handledThrough: null };
}
