import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface SchedulerConfig extends CommonConfig {
  /** SCHEDULER_MISFIRE_GRACE_SECONDS: a tick handled later than this after its fire time is missed (addendum §14.6). */
  misfireGraceSeconds: number;
  /** Longest wait between two looks at the earliest nextRunAt (the safety net of the timer). */
  pollIntervalMs: number;
  /** Fire transactions at once (batches of due schedules). */
  concurrency: number;
  /** Due schedules per fire transaction, fired set-based (decision 0086). */
  batchSize: number;
  /** How long before a known fire instant its ticks are written, to commit at the instant (decision 0097); 0 turns it off. */
  prepareAheadMs: number;
}

export function parseConfig(env: Record<string, string | undefined>): SchedulerConfig {
  const read = envReader(env);
  const config: SchedulerConfig = {
    ...commonConfig(read, 8083),
    misfireGraceSeconds: read.int('SCHEDULER_MISFIRE_GRACE_SECONDS', 60, { min: 0 }),
    pollIntervalMs: read.int('SCHEDULER_POLL_INTERVAL_MS', 1000, { min: 50, max: 1000 }),
    concurrency: read.int('SCHEDULER_CONCURRENCY', 2, { min: 1, max: 64 }),
    batchSize: read.int('SCHEDULER_BATCH_SIZE', 250, { min: 1, max: 1000 }),
    prepareAheadMs: read.int('SCHEDULER_PREPARE_AHEAD_MS', 1000, { min: 0, max: 5000 }),
  };
  read.done();
  return config;
}
