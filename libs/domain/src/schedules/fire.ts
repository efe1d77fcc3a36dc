/**
 * What each tick of one firing of a schedule does (addendum §14.5, §14.7): the scheduler's
 * Scheduled and Catchup ticks, a backfill's ticks, a manual trigger, a Queued run's promotion (a
 * tick fired when nothing is open). One rule for every caller; libs/db `fireScheduleTicks` carries
 * it out.
 */
import { decideOverlap, type OverlapPolicy } from './overlap.js';

/** Backfill: POST /schedules/{name}/backfill; Manual: POST …/trigger (no overlap). */
export type FireTrigger = 'Scheduled' | 'Catchup' | 'Backfill' | 'Manual';
export type FiredStatus = 'Created' | 'Queued' | 'Skipped' | 'Failed';

export interface FireRules {
  policy: OverlapPolicy;
  catchupMax: number;
  /** A Paused schedule holds no Queued runs (pausing skips them): a tick that would queue is Skipped (`paused`). */
  paused?: boolean;
}

/** The schedule before the first tick: its unfinished pipelines (any run's, §14.5) and its Queued runs. */
export interface FireState {
  open: number;
  queued: number;
}

export interface FireTick {
  trigger: FireTrigger;
  /** The unjittered tick (scheduledFor); the trigger time of a Manual run. */
  tick: Date;
}

export interface TickPlan {
  status: FiredStatus;
  /** Null for Created; a Replace's `replaced:{id}` is added by whoever cancels (only it knows which pipelines were still open). */
  reason: string | null;
  /** A pipeline is created for the tick. */
  create: boolean;
  /** Replace: every pipeline unfinished before this tick is cancelled first (as POST cancel), also when the creation then fails. */
  replace: boolean;
}

/**
 * The ticks in order, each seeing what the earlier ones did: the schedule overlaps while any of its
 * pipelines is unfinished, and a Manual trigger ignores overlap but counts as one (§14.5, §14.7).
 * Skip → Skipped (`overlap`); Queue → Queued while fewer than catchupMax are, else Skipped
 * (`queue_full`); Replace → cancel, then create; Allow → create. `failure` is why this schedule's
 * pipeline cannot be created (its definition breaks the creation rules, or the database refused
 * it), or null: a tick that would create is then Failed with that reason and leaves no pipeline
 * behind, so the next one does not overlap with it.
 */
export function planTicks<T extends FireTick>(rules: FireRules, state: FireState, ticks: readonly T[], failure: string | null): (T & TickPlan)[] {
  let open = state.open;
  let queued = state.queued;
  return ticks.map((t): T & TickPlan => {
    const decision = t.trigger === 'Manual' ? ({ action: 'create' } as const) : decideOverlap(rules.policy, open > 0, queued, rules.catchupMax);
    switch (decision.action) {
      case 'skip':
        return { ...t, status: 'Skipped', reason: decision.reason, create: false, replace: false };
      case 'queue':
        if (rules.paused) return { ...t, status: 'Skipped', reason: 'paused', create: false, replace: false };
        queued += 1;
        return { ...t, status: 'Queued', reason: decision.reason, create: false, replace: false };
      case 'create':
      case 'replace': {
        const replace = decision.action === 'replace';
        if (replace) open = 0;
        if (failure !== null) return { ...t, status: 'Failed', reason: failure, create: false, replace };
        open += 1;
        return { ...t, status: 'Created', reason: null, create: true, replace };
      }
    }
  });
}
