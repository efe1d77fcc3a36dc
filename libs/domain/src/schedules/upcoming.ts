/**
 * The next fire instants of a stored plan, for display (the dashboard's "next runs"; GET
 * /schedules). Pure, and built on the same rules as the scheduler's passes (due.ts): every tick
 * from `nextTickAt` on fires at its own jittered instant, and a tick whose fire time is not after
 * `handledThrough` was handled already.
 */
import type { StoredPlan } from './due.js';
import { jitteredFireAt } from './jitter.js';
import { nextTick } from './plan.js';

export type UpcomingPlan = Omit<StoredPlan, 'catchupPolicy' | 'catchupMax'>;

/** Upper bound of ticks walked (jitter of an hour over a 1 s `@every` is 3,600 of them). */
const MAX_WALK = 100_000;

/**
 * The earliest `count` fire instants after `now` of the plan's unhandled ticks, ascending. With
 * jitter larger than the period a later tick can fire before an earlier one, so ticks are walked
 * in tick order until one starts after the count-th earliest fire time found (a tick never fires
 * before itself). A fire time that has passed is not listed: the scheduler fires such a tick late
 * or counts it missed, never at that instant. Ticks of a plan left far behind (a scheduler that was
 * down) are skipped without being walked. Empty when nothing is planned (`nextTickAt` null).
 */
export function upcomingFires(s: UpcomingPlan, now: Date, count: number): Date[] {
  const first = s.nextTickAt;
  if (first === null || count < 1) return [];
  const floor = Math.max(now.getTime(), s.handledThrough?.getTime() ?? -Infinity);
  // A tick at or before floor − maxJitter fires at or before floor, whatever its offset.
  const skipTo = floor - Math.max(0, Math.floor(s.jitterSeconds)) * 1000;
  let t: Date | null = first.getTime() <= skipTo ? nextTick(s, s.planAnchor, new Date(skipTo)) : first;
  const best: number[] = [];
  for (let walked = 0; t !== null && walked < MAX_WALK; walked++) {
    const last = best[count - 1];
    if (last !== undefined && t.getTime() >= last) break;
    const fire = jitteredFireAt(s.id, t, s.jitterSeconds).getTime();
    if (fire > floor) {
      best.push(fire);
      best.sort((a, b) => a - b);
      if (best.length > count) best.length = count;
    }
    t = nextTick(s, s.planAnchor, t);
  }
  return best.map((ms) => new Date(ms));
}
