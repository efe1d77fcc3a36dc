import { commonConfig, envReader, type CommonConfig } from '@po/config';
import type { TokenBucketLimits } from '@po/domain';

export interface ApiGatewayConfig extends CommonConfig {
  maxBodyBytes: number;
  cancelTimeoutSeconds: number;
  /** Anonymous POST /logs, per client address (decision 0083); rate 0 = no limit. */
  logsAnonLimit: TokenBucketLimits;
  build: { version: string; commit: string | null; builtAt: string | null };
}

/** LOGS_ANON_RATE_PER_MINUTE and LOGS_ANON_BURST when unset. */
export const LOGS_ANON_DEFAULTS: TokenBucketLimits = { ratePerMinute: 600, burst: 100 };

export function parseConfig(env: Record<string, string | undefined>): ApiGatewayConfig {
  const read = envReader(env);
  const config: ApiGatewayConfig = {
    ...commonConfig(read, 8080),
    maxBodyBytes: read.int('API_MAX_BODY_BYTES', 33_554_432, { min: 1024 }),
    cancelTimeoutSeconds: read.int('CANCEL_TIMEOUT_SECONDS', 10, { min: 1 }),
    logsAnonLimit: {
      ratePerMinute: read.int('LOGS_ANON_RATE_PER_MINUTE', LOGS_ANON_DEFAULTS.ratePerMinute, { min: 0, max: 1_000_000 }),
      burst: read.int('LOGS_ANON_BURST', LOGS_ANON_DEFAULTS.burst, { min: 1, max: 1_000_000 }),
    },
    build: {
      version: read.str('APP_VERSION', '0.5.0'),
      commit: env.GIT_COMMIT?.trim() || null,
      builtAt: env.BUILT_AT?.trim() || null,
    },
  };
  read.done();
  return config;
}
