import { dueTicks as domainDueTicks, planFrom, type DueTicks as DomainDueTicks, type PlanState, type StoredPlan } from '@po/domain';

/** Planned ticks a fire pass handles, and where the plan goes on from (see @po/domain dueTicks). */
export interface DueTicks extends DomainDueTicks {
  /** The new reference (and Interval anchor) of the plan: planAnchor under the name fire.ts uses. */
  anchor: Date;
}

/** The ticks of a stored schedule due at `now` (addendum §14.3, §14.4, §14.6); null without a next tick. */
export function dueTicks(s: StoredPlan, now: Date, graceSeconds: number): DueTicks | null {
  const due = domainDueTicks(s, now, graceSeconds);
  return due === null ? null : { ...due, anchor: due.planAnchor };
}

/** A (re)plan from `now` (creation, behaviour-changing PUT, resume): reference and anchor are now. */
export function replanFrom(s: Parameters<typeof planFrom>[0], now: Date): PlanState {
  return planFrom(s, now);
}
