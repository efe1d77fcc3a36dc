/** Overlap policies (addendum §14.5), for Scheduled and Catchup ticks; Manual triggers skip them. */
import type { OverlapPolicy } from '@po/contracts';

export type { OverlapPolicy } from '@po/contracts';

export type OverlapDecision =
  | { action: 'create'; reason: null }
  | { action: 'skip'; reason: 'overlap' | 'queue_full' }
  | { action: 'queue'; reason: 'overlap' }
  | { action: 'replace' };

/**
 * What a tick does. `overlapping`: a pipeline of any earlier run of the schedule is not terminal.
 * `queuedRuns`: runs of the schedule now Queued. Replace means: cancel every non-terminal pipeline
 * of the schedule, then create (the run's reason is `replaced:{id}` of the newest cancelled one).
 */
export function decideOverlap(
  policy: OverlapPolicy,
  overlapping: boolean,
  queuedRuns: number,
  catchupMax: number,
): OverlapDecision {
  if (!overlapping) return { action: 'create', reason: null };
  switch (policy) {
    case 'Skip':
      return { action: 'skip', reason: 'overlap' };
    case 'Queue':
      return queuedRuns < catchupMax
        ? { action: 'queue', reason: 'overlap' }
        : { action: 'skip', reason: 'queue_full' };
    case 'Replace':
      return { action: 'replace' };
    case 'Allow':
      return { action: 'create', reason: null };
  }
}
