import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface ResultConsumerConfig extends CommonConfig {
  concurrency: number;
}

export function parseConfig(env: Record<string, string | undefined>): ResultConsumerConfig {
  const read = envReader(env);
  const config = { ...commonConfig(read, 8084), concurrency: read.int('RESULT_CONSUMER_CONCURRENCY', 16, { min: 1, max: 256 }) };
  read.done();
  return config;
}
