/** Catch-up of missed ticks (addendum §14.6). */
import type { CatchupPolicy } from '@po/contracts';

export type { CatchupPolicy } from '@po/contracts';

/** Default SCHEDULER_MISFIRE_GRACE_SECONDS (§14.6 [+]). */
export const DEFAULT_MISFIRE_GRACE_SECONDS = 60;

/**
 * The missed ticks that get a run with trigger Catchup, oldest first: None → none, One → the
 * latest, All → the latest `catchupMax`. `missed` is expected ascending; it is sorted defensively.
 */
export function selectCatchup(
  missed: readonly Date[],
  policy: CatchupPolicy,
  catchupMax: number,
): Date[] {
  const ordered = [...missed].sort((a, b) => a.getTime() - b.getTime());
  switch (policy) {
    case 'None':
      return [];
    case 'One':
      return ordered.slice(-1);
    case 'All': {
      const keep = Math.max(0, Math.floor(catchupMax));
      return keep === 0 ? [] : ordered.slice(-keep);
    }
  }
}

/** A tick first handled more than `graceSeconds` after its fire time is missed; within the grace it fires normally. */
export function isMissed(fireAt: Date, handledAt: Date, graceSeconds: number): boolean {
  return handledAt.getTime() - fireAt.getTime() > graceSeconds * 1000;
}
