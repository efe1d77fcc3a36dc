import type { TickOutcome } from './create-run.js';
import type { SchedulerDeps } from './deps.js';
import { FireFailed, fireDueSchedules, promoteQueuedRuns, type FireResult } from './fire.js';

export interface PassSummary {
  /** Schedules handled. */
  schedules: number;
  /** Ticks handled, by outcome. */
  ticks: Record<TickOutcome, number>;
  /** Ticks missed (catch-up policy applied). */
  missed: number;
  /** Queued runs that got their pipeline. */
  promoted: number;
  /** Schedules whose own (guarded) transaction failed; retried on the next pass. */
  failed: number;
}

export interface PassOptions {
  /** Transactions at once (SCHEDULER_CONCURRENCY). */
  concurrency?: number;
  /** Schedules per transaction. */
  batchSize?: number;
}

/**
 * One scheduler pass at `deps.clock()`: promotes Queued runs whose schedule is free, then fires
 * every due schedule, `batchSize` schedules per transaction and `concurrency` transactions at
 * once. A batch that fails is rolled back and its schedules are retried one by one in guarded
 * mode (claim first, savepoints), so a schedule that keeps failing is isolated and left for the
 * next pass instead of holding up the others. Tests drive the scheduler through this function.
 */
export async function runDuePass(deps: SchedulerDeps, options: PassOptions = {}): Promise<PassSummary> {
  const summary: PassSummary = {
    schedules: 0,
    ticks: { created: 0, failed: 0, skipped: 0, queued: 0, already_fired: 0 },
    missed: 0,
    promoted: await promoteQueuedRuns(deps),
    failed: 0,
  };
  const tally = (results: FireResult[] | null) => {
    for (const result of results ?? []) {
      summary.schedules += 1;
      summary.missed += result.missed;
      for (const outcome of result.outcomes) summary.ticks[outcome] += 1;
    }
    return results !== null;
  };
  const exclude = new Set<number>();
  const worker = async (): Promise<void> => {
    for (;;) {
      try {
        if (!tally(await fireDueSchedules(deps, { limit: options.batchSize ?? 50, guarded: false, exclude }))) return;
      } catch (err) {
        const ids = err instanceof FireFailed ? err.scheduleIds : [];
        deps.logger.warn({ err, scheduleIds: ids }, 'a fire batch failed; retrying its schedules one by one');
        if (ids.length === 0) return;
        for (const id of ids) {
          try {
            tally(await fireDueSchedules(deps, { limit: 1, guarded: true, only: [id] }));
          } catch (retryErr) {
            summary.failed += 1;
            exclude.add(id);
            deps.logger.error({ err: retryErr, scheduleId: id }, 'firing a schedule failed; retried next pass');
          }
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  return summary;
}
