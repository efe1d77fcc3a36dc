import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface PipelineServiceConfig extends CommonConfig {
  eventConcurrency: number;
}

export function parseConfig(env: Record<string, string | undefined>): PipelineServiceConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8082),
    eventConcurrency: read.int('DISPATCH_EVENT_CONCURRENCY', 8, { min: 1, max: 256 }),
  };
  read.done();
  return config;
}
