import { scheduleRuns, scheduleTickLag } from '@po/telemetry';
import type { TickOutcome } from '@po/engine';

/**
 * Metrics of committed fire transactions (counted after commit, so a batch rolled back and retried
 * in guarded mode is counted once): runs by outcome, and how late each scheduled tick fired.
 * Catch-up ticks are late on purpose and not part of the lag.
 */
export function recordFired(outcomes: readonly TickOutcome[], scheduledLagsMs: readonly number[]): void {
  for (const outcome of outcomes) scheduleRuns().labels(outcome).inc();
  for (const lag of scheduledLagsMs) scheduleTickLag().observe(Math.max(0, lag) / 1000);
}

/** Queued runs that got their pipeline. */
export function recordPromoted(count: number): void {
  if (count > 0) scheduleRuns().labels('promoted').inc(count);
}
