import type { SchedulePlanWrite, ScheduleRecord } from '@po/db';
import { DomainError, planFrom, type PlanInput } from '@po/domain';

export class ScheduleArchived extends DomainError {
  constructor(name: string) {
    super('schedule_archived', `Schedule "${name}" is archived; only PUT can re-activate it.`);
  }
}

export class NoFutureRun extends DomainError {
  constructor(name: string) {
    super('no_future_run', `Schedule "${name}" runs once and its runAt has passed.`);
  }
}

export class NotPlannable extends DomainError {
  constructor(name: string, why: string) {
    super('not_plannable', `Schedule "${name}" can no longer be planned: ${why}`);
  }
}

type Plannable = Pick<ScheduleRecord, 'id' | 'kind' | 'cronExpression' | 'intervalSeconds' | 'runAt' | 'timeZone' | 'jitterSeconds'>;

export function planOf(s: Omit<Plannable, 'id' | 'jitterSeconds'>): PlanInput {
  return { kind: s.kind, cronExpression: s.cronExpression, intervalSeconds: s.intervalSeconds, runAt: s.runAt, timeZone: s.timeZone };
}

/**
 * A (re)plan from `now` (addendum §14.3): creation, a behaviour-changing PUT, a resume or a
 * re-activation. The reference and the Interval anchor become now; nextRunAt is the jittered
 * fire time of the first tick after now (null when nothing is left).
 */
export function replanFrom(s: Plannable, now: Date): SchedulePlanWrite {
  return planFrom({ ...planOf(s), id: s.id, jitterSeconds: s.jitterSeconds }, now);
}

/** Not planned while Paused or Archived: the plan restarts from now on resume or PUT. */
export const unplanned = (now: Date): SchedulePlanWrite => ({ planAnchor: now, nextTickAt: null, nextRunAt: null, handledThrough: null });
