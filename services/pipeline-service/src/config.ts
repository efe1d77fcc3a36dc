import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface PipelineServiceConfig extends CommonConfig {
  eventConcurrency: number;
  /** Passes written in one transaction at most. */
  batchSize: number;
  maxActiveStages: number;
  sweepIntervalMs: number;
  lostMessageAfterSeconds: number;
}

export function parseConfig(env: Record<string, string | undefined>): PipelineServiceConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8082),
    eventConcurrency: read.int('DISPATCH_EVENT_CONCURRENCY', 64, { min: 1, max: 1024 }),
    batchSize: read.int('DISPATCH_BATCH', 64, { min: 1, max: 500 }),
    maxActiveStages: read.int('APP_MAX_ACTIVE_STAGES', 0, { min: 0 }),
    sweepIntervalMs: read.int('DISPATCH_SWEEP_INTERVAL_MS', 500, { min: 50, max: 1000 }),
    lostMessageAfterSeconds: read.int('DISPATCH_LOST_MESSAGE_AFTER_SECONDS', 30, { min: 1, max: 86_400 }),
  };
  read.done();
  return config;
}
