import { earliestNextRunAt } from '@po/db';
import type { SchedulerDeps } from './deps.js';
import { runAheadPass, runDuePass } from './pass.js';

export interface SchedulerLoopOptions {
  /** Longest wait between two passes (SCHEDULER_POLL_INTERVAL_MS, at most 1000). */
  pollIntervalMs: number;
  /** Fire transactions at once (SCHEDULER_CONCURRENCY). */
  concurrency: number;
  /** Schedules per fire transaction (SCHEDULER_BATCH_SIZE). */
  batchSize?: number;
  /** How long before a fire instant its ticks are prepared (SCHEDULER_PREPARE_AHEAD_MS); 0: not at all. */
  aheadMs?: number;
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
 *
 * With `aheadMs`, a fire instant that is known at least that long in advance is prepared: the timer
 * wakes `aheadMs` before it, the ahead pass writes its ticks and commits them at the instant
 * (decision 0097), and the regular pass follows at once for whatever the ahead pass left.
 */
export function startSchedulerLoop(deps: SchedulerDeps, options: SchedulerLoopOptions): SchedulerLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const aheadMs = options.aheadMs ?? 0;
  const passOptions = { concurrency: options.concurrency, ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }) };

  /** Sleeps until `due` (or `aheadMs` before it) when that comes before the poll interval ends, else for the poll interval. */
  const arm = (due: Date | null) => {
    if (stopped) return;
    const untilDue = due === null ? Infinity : due.getTime() - deps.clock().getTime();
    if (untilDue - aheadMs > options.pollIntervalMs) {
      timer = setTimeout(pass, options.pollIntervalMs);
      return;
    }
    if (aheadMs > 0 && untilDue > aheadMs) {
      timer = setTimeout(() => pass(due!), untilDue - aheadMs);
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
  /** A regular pass; with `ahead`, the ahead pass for that instant first. */
  const pass = (ahead?: Date) => {
    if (stopped) return;
    running = (async () => {
      let next: Date | null = null;
      try {
        if (ahead) await runAheadPass(deps, ahead, passOptions);
        await runDuePass(deps, passOptions);
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
