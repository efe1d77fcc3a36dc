/** Recent-run health of a schedule (addendum §14.9). */
import type { ScheduleHealth, ScheduleRunStatus } from '@po/contracts';

export interface RunForHealth {
  status: ScheduleRunStatus;
  pipelineStatus: string | null;
  createdAt: Date;
}

/** The wire ScheduleHealth (@po/contracts) before serialisation: lastFailureAt is still an instant. */
export type ScheduleHealthTally = Omit<ScheduleHealth, 'lastFailureAt'> & { lastFailureAt: Date | null };

export const HEALTH_WINDOW = 20;

type Bucket = 'completed' | 'failed' | 'cancelled' | 'running' | 'skipped';

/**
 * Skipped → skipped; Failed (creation failed) → failed; Queued → running; Created → by its
 * pipeline: Completed, Failed, Cancelled, anything else (not terminal, or unknown) → running.
 */
export function healthBucket(run: RunForHealth): Bucket {
  if (run.status === 'Skipped') return 'skipped';
  if (run.status === 'Failed') return 'failed';
  if (run.status === 'Queued') return 'running';
  if (run.pipelineStatus === 'Completed') return 'completed';
  if (run.pipelineStatus === 'Failed') return 'failed';
  if (run.pipelineStatus === 'Cancelled') return 'cancelled';
  return 'running';
}

/** §14.9 over the newest 20 runs; `runsNewestFirst` is newest first and only its first 20 count. */
export function scheduleHealth(runsNewestFirst: readonly RunForHealth[]): ScheduleHealthTally {
  const counts: Record<Bucket, number> = {
    completed: 0,
    failed: 0,
    cancelled: 0,
    running: 0,
    skipped: 0,
  };
  let lastFailureAt: Date | null = null;
  let newestFinished: Bucket | null = null;
  const window = runsNewestFirst.slice(0, HEALTH_WINDOW);
  for (const run of window) {
    const bucket = healthBucket(run);
    counts[bucket] += 1;
    if (bucket === 'failed' && lastFailureAt === null) lastFailureAt = run.createdAt;
    if (
      newestFinished === null &&
      (bucket === 'completed' || bucket === 'failed' || bucket === 'cancelled')
    ) {
      newestFinished = bucket;
    }
  }
  const total = window.length;
  const state =
    total === 0
      ? 'idle'
      : newestFinished === 'failed' && counts.failed >= counts.completed
        ? 'failing'
        : counts.failed > 0
          ? 'degraded'
          : 'healthy';
  return { windowSize: HEALTH_WINDOW, total, ...counts, lastFailureAt, state };
}
