import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface PipelineServiceConfig extends CommonConfig {
  eventConcurrency: number;
  maxActiveStages: number;
  sweepIntervalMs: number;
}

export function parseConfig(env: Record<string, string | undefined>): PipelineServiceConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8082),
    eventConcurrency: read.int('DISPATCH_EVENT_CONCURRENCY', 8, { min: 1, max: 256 }),
    maxActiveStages: read.int('APP_MAX_ACTIVE_STAGES', 0, { min: 0 }),
    sweepIntervalMs: read.int('DISPATCH_SWEEP_INTERVAL_MS', 500, { min: 50, max: 1000 }),
  };
  read.done();
  return config;
}
