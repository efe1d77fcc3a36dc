import { earliestNextRunAt } from '@po/db';
import type { SchedulerDeps } from './deps.js';
import { runDuePass } from './pass.js';

export interface SchedulerLoopOptions {
  /** Longest wait between two passes (SCHEDULER_POLL_INTERVAL_MS, at most 1000). */
  pollIntervalMs: number;
  concurrency: number;
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
 */
export function startSchedulerLoop(deps: SchedulerDeps, options: SchedulerLoopOptions): SchedulerLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const arm = (next: Date | null) => {
    if (stopped) return;
    const untilNext = next === null ? options.pollIntervalMs : next.getTime() - deps.clock().getTime();
    timer = setTimeout(pass, Math.max(0, Math.min(untilNext, options.pollIntervalMs)));
  };
  const pass = () => {
    running = (async () => {
      let next: Date | null = null;
      try {
        await runDuePass(deps, { concurrency: options.concurrency });
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
