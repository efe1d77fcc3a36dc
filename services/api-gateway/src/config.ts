import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface ApiGatewayConfig extends CommonConfig {
  maxBodyBytes: number;
  cancelTimeoutSeconds: number;
  build: { version: string; commit: string | null; builtAt: string | null };
}

export function parseConfig(env: Record<string, string | undefined>): ApiGatewayConfig {
  const read = envReader(env);
  const config: ApiGatewayConfig = {
    ...commonConfig(read, 8080),
    maxBodyBytes: read.int('API_MAX_BODY_BYTES', 33_554_432, { min: 1024 }),
    cancelTimeoutSeconds: read.int('CANCEL_TIMEOUT_SECONDS', 10, { min: 1 }),
    build: {
      version: read.str('APP_VERSION', '0.5.0'),
      commit: env.GIT_COMMIT?.trim() || null,
      builtAt: env.BUILT_AT?.trim() || null,
    },
  };
  read.done();
  return config;
}
