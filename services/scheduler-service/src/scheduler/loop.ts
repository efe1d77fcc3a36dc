import { earliestNextRunAt } from '@po/db';
import type { SchedulerDeps } from './deps.js';
import { runDuePass } from './pass.js';

export interface SchedulerLoopOptions {
  /** Longest wait between two passes (SCHEDULER_POLL_INTERVAL_MS, at most 1000). */
  pollIntervalMs: number;
  /** Fire transactions at once (SCHEDULER_CONCURRENCY). */
  concurrency: number;
  /** Schedules per fire transaction (SCHEDULER_BATCH_SIZE). */
  batchSize?: number;
}

export interface SchedulerLoop {
  /** Stops the timer and waits for the pass in flight to commit. */
  stop(): Promise<void>;
}

/**
 * The scheduler's clock: after each pass it reads the earliest nextRunAt of the Active schedules
 * and sleeps until then, but never longer than pollIntervalMs. The timer gives low latency for
 * known ticks; the bounded sleep picks up schedules created, changed or resumed meanwhile (by the
 * api-gateway or another replica) and Queued runs whose blocking pipeline ended.
 *
 * A Node timer may fire up to a millisecond before the wall-clock instant it was set for (its
 * clock is monotonic and rounds to whole milliseconds): a pass then would find nothing due yet.
 * So a timer aimed at a fire time that wakes early sleeps the rest instead of running the pass.
 */
export function startSchedulerLoop(deps: SchedulerDeps, options: SchedulerLoopOptions): SchedulerLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  /** Sleeps until `due` (when it comes before the poll interval ends), else for the poll interval. */
  const arm = (due: Date | null) => {
    if (stopped) return;
    const untilDue = due === null ? Infinity : due.getTime() - deps.clock().getTime();
    if (untilDue > options.pollIntervalMs) {
      timer = setTimeout(pass, options.pollIntervalMs);
      return;
    }
    const wake = () => {
      if (stopped) return;
      const left = due!.getTime() - deps.clock().getTime();
      if (left > 0) timer = setTimeout(wake, left);
      else pass();
    };
    timer = setTimeout(wake, Math.max(0, untilDue));
  };
  const pass = () => {
    running = (async () => {
      let next: Date | null = null;
      try {
        await runDuePass(deps, { concurrency: options.concurrency, ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }) });
        next = await earliestNextRunAt(deps.db);
      } catch (err) {
        deps.logger.error({ err }, 'scheduler pass failed');
      }
      arm(next);
    })();
  };

  pass();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
