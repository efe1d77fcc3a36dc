import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface SchedulerConfig extends CommonConfig {
  /** SCHEDULER_MISFIRE_GRACE_SECONDS: a tick handled later than this after its fire time is missed (addendum §14.6). */
  misfireGraceSeconds: number;
  /** Longest wait between two looks at the earliest nextRunAt (the safety net of the timer). */
  pollIntervalMs: number;
  /** Due schedules handled at once, each in its own transaction. */
  concurrency: number;
}

export function parseConfig(env: Record<string, string | undefined>): SchedulerConfig {
  const read = envReader(env);
  const config: SchedulerConfig = {
    ...commonConfig(read, 8083),
    misfireGraceSeconds: read.int('SCHEDULER_MISFIRE_GRACE_SECONDS', 60, { min: 0 }),
    pollIntervalMs: read.int('SCHEDULER_POLL_INTERVAL_MS', 1000, { min: 50, max: 1000 }),
    concurrency: read.int('SCHEDULER_CONCURRENCY', 8, { min: 1, max: 64 }),
  };
  read.done();
  return config;
}
