import type { TickOutcome } from './create-run.js';
import type { SchedulerDeps } from './deps.js';
import { fireNextDueSchedule, promoteQueuedRuns } from './fire.js';

export interface PassSummary {
  /** Schedules handled. */
  schedules: number;
  /** Ticks handled, by outcome. */
  ticks: Record<TickOutcome, number>;
  /** Ticks missed (catch-up policy applied). */
  missed: number;
  /** Queued runs that got their pipeline. */
  promoted: number;
  /** Schedules whose transaction failed; retried on the next pass. */
  failed: number;
}

/**
 * One scheduler pass at `deps.clock()`: promotes Queued runs whose schedule is free, then fires
 * every due schedule, `concurrency` schedules at a time, each in its own transaction. Tests drive
 * the scheduler through this function with a fake clock.
 */
export async function runDuePass(deps: SchedulerDeps, options: { concurrency?: number } = {}): Promise<PassSummary> {
  const summary: PassSummary = {
    schedules: 0,
    ticks: { created: 0, failed: 0, skipped: 0, queued: 0, already_fired: 0 },
    missed: 0,
    promoted: await promoteQueuedRuns(deps),
    failed: 0,
  };
  // A schedule whose transaction fails is left alone for the rest of this pass, so it cannot
  // hold up the schedules due after it.
  const exclude = new Set<number>();
  const worker = async (): Promise<void> => {
    for (;;) {
      try {
        const result = await fireNextDueSchedule(deps, exclude);
        if (result === null) return;
        summary.schedules += 1;
        summary.missed += result.missed;
        for (const outcome of result.outcomes) summary.ticks[outcome] += 1;
      } catch (err) {
        summary.failed += 1;
        const scheduleId = (err as { scheduleId?: number | null }).scheduleId;
        deps.logger.error({ err, scheduleId }, 'firing a schedule failed; retried next pass');
        if (scheduleId === null || scheduleId === undefined) return;
        exclude.add(scheduleId);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  return summary;
}
