import { earliestNextRunAt, sqlOf } from '@po/db';
import { crowdedFireInstant } from '@po/engine';
import type { SchedulerDeps } from './deps.js';
import { runAheadPass, runDuePass, type PassOptions } from './pass.js';

export interface SchedulerLoopOptions {
  /** Longest wait between two passes (SCHEDULER_POLL_INTERVAL_MS, at most 1000). */
  pollIntervalMs: number;
  /** Fire transactions at once (SCHEDULER_CONCURRENCY). */
  concurrency: number;
  /** Schedules per fire transaction (SCHEDULER_BATCH_SIZE). */
  batchSize?: number;
  /** How long before a crowded fire instant its ticks are prepared (SCHEDULER_PREPARE_AHEAD_MS); 0: not at all. */
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
 * With `aheadMs`, a second timer, the preparer, runs beside it (decision 0097): it looks for the
 * earliest fire instant that AHEAD_MIN_SCHEDULES schedules share within the next `aheadMs` plus a
 * poll interval, wakes `aheadMs` before it and runs the ahead pass, whose batches commit at the
 * instant. The regular loop meanwhile fires everything else; at the instant it finds the prepared
 * schedules locked and skips them (SKIP LOCKED), and whatever the ahead pass left or failed on is
 * still due for it.
 */
export function startSchedulerLoop(deps: SchedulerDeps, options: SchedulerLoopOptions): SchedulerLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const passOptions = { concurrency: options.concurrency, ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }) };

  /** Sleeps until `due` (when it comes before the poll interval ends), else for the poll interval. */
  const arm = (due: Date | null, idle: boolean) => {
    if (stopped) return;
    const untilDue = due === null ? Infinity : due.getTime() - deps.clock().getTime();
    if (untilDue > options.pollIntervalMs) {
      timer = setTimeout(pass, options.pollIntervalMs);
      return;
    }
    // Due already, yet the pass found nothing to fire: another transaction holds those schedules
    // (a replica's batch, or a batch prepared ahead until its instant). Look again shortly rather
    // than at once, over and over, until it commits.
    if (untilDue <= 0 && idle) {
      timer = setTimeout(pass, HELD_RETRY_MS);
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
      let idle = false;
      try {
        const summary = await runDuePass(deps, passOptions);
        idle = summary.schedules === 0 && summary.promoted === 0;
        next = await earliestNextRunAt(deps.db);
      } catch (err) {
        deps.logger.error({ err }, 'scheduler pass failed');
      }
      arm(next, idle);
    })();
  };

  const preparer = options.aheadMs ? startPreparer(deps, { ...options, aheadMs: options.aheadMs }, passOptions) : null;
  pass();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await Promise.all([running, preparer?.stop()]);
    },
  };
}

/** Schedules that must share a fire instant for the preparer to take it ahead. */
export const AHEAD_MIN_SCHEDULES = 10;
/** The preparer does not start on an instant closer than this: the regular pass is as quick then. */
const AHEAD_MIN_LEAD_MS = 100;
const HELD_RETRY_MS = 10;

function startPreparer(deps: SchedulerDeps, options: SchedulerLoopOptions & { aheadMs: number }, passOptions: PassOptions): SchedulerLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const look = () => {
    running = (async () => {
      let wait = options.pollIntervalMs;
      try {
        const now = deps.clock().getTime();
        const crowded = await crowdedFireInstant(sqlOf(deps.db), new Date(now + AHEAD_MIN_LEAD_MS), new Date(now + options.aheadMs + options.pollIntervalMs), AHEAD_MIN_SCHEDULES);
        if (crowded) {
          const until = crowded.at.getTime() - options.aheadMs - deps.clock().getTime();
          if (until <= 0) {
            await runAheadPass(deps, crowded.at, passOptions);
            wait = 0;
          } else {
            wait = Math.min(until, options.pollIntervalMs);
          }
        }
      } catch (err) {
        deps.logger.error({ err }, 'preparing ticks ahead failed; they fire in the regular pass');
      }
      if (!stopped) timer = setTimeout(look, wait);
    })();
  };
  look();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
