import { commonConfig, envReader, type CommonConfig } from '@po/config';

export type ServiceConfig = CommonConfig;

export function parseConfig(env: Record<string, string | undefined>): ServiceConfig {
  const read = envReader(env);
  const config = commonConfig(read, 8083);
  read.done();
  return config;
}
