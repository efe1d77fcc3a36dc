/**
 * Which ticks of a schedule are due, and where its plan goes on from (addendum §14.3, §14.4,
 * §14.6). Pure: the scheduler passes the stored plan and `now`.
 *
 * Every tick fires at its own jittered instant (tick + offset). With jitter larger than the period
 * a later tick can fire before an earlier one, so the plan is not a single cursor: `nextTickAt` is
 * the first unhandled tick in tick order, and `handledThrough` says which of the ticks after it
 * were handled already — those whose fire time is not after it. `nextRunAt` is the earliest fire
 * time of any unhandled tick, which is what the scheduler's timer waits for.
 */
import { isMissed, selectCatchup, type CatchupPolicy } from './catchup.js';
import { jitteredFireAt } from './jitter.js';
import { nextTick, ticksBetween, type PlanInput } from './plan.js';

export interface StoredPlan extends PlanInput {
  /** Part of the jitter hash (§14.4). */
  id: number;
  /** The reference of the plan: the last (re)plan or the last tick handled in order; the Interval anchor. */
  planAnchor: Date;
  nextTickAt: Date | null;
  handledThrough: Date | null;
  jitterSeconds: number;
  catchupPolicy: string;
  catchupMax: number;
}

/** The plan columns a pass or a (re)plan writes. */
export interface PlanState {
  planAnchor: Date;
  nextTickAt: Date | null;
  nextRunAt: Date | null;
  handledThrough: Date | null;
}

export interface DueTicks extends PlanState {
  /** Missed ticks that get a Catchup run (catch-up policy applied), ascending. */
  catchup: Date[];
  /** Ticks handled within the misfire grace: they fire normally, ascending. */
  scheduled: Date[];
  /** How many ticks were missed in all (including those the policy drops). */
  missed: number;
}

/** Upper bound of ticks walked one by one; a stretch of certainly missed ticks is counted in bulk. */
const MAX_WALK = 100_000;

/**
 * The earliest fire time among the ticks from `first` on (in tick order) that are not handled
 * (fire time after `handledThrough`). A tick never fires before itself, so the walk stops at the
 * first tick later than the best fire time found: at most jitter / period ticks.
 */
function earliestFire(s: StoredPlan, first: Date | null, handledThrough: number): Date | null {
  let best: Date | null = null;
  for (
    let t = first, walked = 0;
    t !== null && (best === null || t < best) && walked < MAX_WALK;
    walked++
  ) {
    const fire = jitteredFireAt(s.id, t, s.jitterSeconds);
    if (fire.getTime() > handledThrough && (best === null || fire < best)) best = fire;
    t = nextTick(s, s.planAnchor, t);
  }
  return best;
}

/**
 * The ticks of a schedule due at `now`: every tick from the stored next tick on whose fire time is
 * not after `now` and was not handled before (not at or before `handledThrough`). A tick whose fire
 * time is more than `graceSeconds` before `now` is missed (§14.6); of the missed ticks the
 * catch-up policy keeps none, the latest, or the latest `catchupMax`. Ticks so old that they are
 * missed whatever their jitter are counted without being walked, so an outage of any length costs
 * the same. Null when the schedule has no stored next tick.
 */
export function dueTicks(s: StoredPlan, now: Date, graceSeconds: number): DueTicks | null {
  const first = s.nextTickAt;
  if (first === null) return null;
  const nowMs = now.getTime();
  const done = s.handledThrough?.getTime() ?? -Infinity;
  // Another replica's clock may be ahead: ticks it handled can lie after our now.
  const walkUntil = Math.max(nowMs, done);
  const keep = Math.max(1, s.catchupMax);
  // Not yet handled (t > done) and missed whatever the jitter: t + maxJitter < now − grace.
  const certainlyMissedUntil = nowMs - graceSeconds * 1000 - s.jitterSeconds * 1000 - 1;

  const missed: Date[] = [];
  let missedTotal = 0;
  const scheduled: Date[] = [];
  /** The first tick, in tick order, that stays unhandled; the last handled one before it. */
  let pending: Date | null = null;
  let lastInOrder: Date | null = null;

  let t: Date | null = first;
  let walked = 0;
  for (; t !== null && t.getTime() <= walkUntil && walked < MAX_WALK; walked++) {
    if (t.getTime() > done && t.getTime() <= certainlyMissedUntil) {
      const bulk = ticksBetween(
        s,
        s.planAnchor,
        new Date(t.getTime() - 1),
        new Date(certainlyMissedUntil),
        keep,
      );
      missed.push(...bulk.ticks);
      if (missed.length > keep) missed.splice(0, missed.length - keep);
      missedTotal += bulk.total;
      const last = bulk.ticks[bulk.ticks.length - 1];
      if (last !== undefined && pending === null) lastInOrder = last;
      t = nextTick(s, s.planAnchor, new Date(certainlyMissedUntil));
      continue;
    }
    const fire = jitteredFireAt(s.id, t, s.jitterSeconds);
    if (fire.getTime() <= done) {
      if (pending === null) lastInOrder = t; // fired by an earlier pass, ahead of a tick before it
    } else if (fire.getTime() > nowMs) {
      pending ??= t;
    } else {
      if (isMissed(fire, now, graceSeconds)) {
        missed.push(t);
        missedTotal += 1;
      } else {
        scheduled.push(t);
      }
      if (pending === null) lastInOrder = t;
    }
    t = nextTick(s, s.planAnchor, t);
  }
  // Ticks after now fire after now: the first of them is pending if nothing before it is.
  pending ??= t;
  // Every tick before `t` was looked at, so every one firing by now is handled; past a walk cut
  // short, only what fires before `t` (no tick from `t` on does).
  const through =
    walked < MAX_WALK || t === null
      ? Math.max(done, nowMs)
      : Math.max(done, Math.min(nowMs, t.getTime() - 1));
  const handledThrough = pending === null ? null : through;
  return {
    catchup: selectCatchup(missed.slice(-keep), s.catchupPolicy as CatchupPolicy, s.catchupMax),
    scheduled,
    missed: missedTotal,
    planAnchor: lastInOrder ?? s.planAnchor,
    nextTickAt: pending,
    nextRunAt:
      pending === null || handledThrough === null ? null : earliestFire(s, pending, handledThrough),
    handledThrough: handledThrough === null ? null : new Date(handledThrough),
  };
}

/**
 * A (re)plan from `now` (§14.3: creation, a behaviour-changing PUT, resume, re-activation): the
 * reference and the Interval anchor become now, no tick is handled yet, and nextRunAt is the
 * earliest fire time of the ticks after now.
 */
export function planFrom(
  s: PlanInput & { id: number; jitterSeconds: number },
  now: Date,
): PlanState {
  const next = nextTick(s, now, now);
  const plan = {
    ...s,
    planAnchor: now,
    nextTickAt: next,
    handledThrough: null,
    catchupPolicy: 'None',
    catchupMax: 1,
  };
  return {
    planAnchor: now,
    nextTickAt: next,
    nextRunAt: earliestFire(plan, next, -Infinity),
    handledThrough: null,
  };
}
