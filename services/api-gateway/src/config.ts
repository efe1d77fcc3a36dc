import { ConfigError, commonConfig, envReader, type CommonConfig } from '@po/config';
import type { TokenBucketLimits } from '@po/domain';

export interface ApiGatewayConfig extends CommonConfig {
  maxBodyBytes: number;
  cancelTimeoutSeconds: number;
  /** APP_MAX_ACTIVE_STAGES: the first pass of a new pipeline throttles like pipeline-service's (decision 0102). */
  maxActiveStages: number;
  /** Anonymous POST /logs, per client address (decision 0083); rate 0 = no limit. */
  logsAnonLimit: TokenBucketLimits;
  build: { version: string; commit: string | null; builtAt: string | null };
  /** GET /ui/config.json (decision 0093). */
  dashboard: { traceUrlTemplate: string | null };
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: webhooks may target private, loopback and link-local addresses (decision 0134). */
  webhookAllowPrivateNetworks: boolean;
}

/**
 * DASHBOARD_TRACE_URL_TEMPLATE: where the dashboard links a pipeline's trace id, an http(s) URL
 * with `{traceId}` in it (`https://jaeger.example/trace/{traceId}`); unset, no links.
 */
export function traceUrlTemplate(value: string | undefined, problems: string[]): string | null {
  const template = value?.trim();
  if (!template) return null;
  let url: URL | null = null;
  try {
    url = new URL(template.replaceAll('{traceId}', '0'));
  } catch {
    // not a URL; said below
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    problems.push('DASHBOARD_TRACE_URL_TEMPLATE must be an http or https URL');
  } else if (!template.includes('{traceId}')) {
    problems.push('DASHBOARD_TRACE_URL_TEMPLATE must contain {traceId}');
  }
  return template;
}

/** LOGS_ANON_RATE_PER_MINUTE and LOGS_ANON_BURST when unset. */
export const LOGS_ANON_DEFAULTS: TokenBucketLimits = { ratePerMinute: 600, burst: 100 };

export function parseConfig(env: Record<string, string | undefined>): ApiGatewayConfig {
  const read = envReader(env);
  const problems: string[] = [];
  const config: ApiGatewayConfig = {
    ...commonConfig(read, 8080),
    maxBodyBytes: read.int('API_MAX_BODY_BYTES', 33_554_432, { min: 1024 }),
    cancelTimeoutSeconds: read.int('CANCEL_TIMEOUT_SECONDS', 10, { min: 1 }),
    maxActiveStages: read.int('APP_MAX_ACTIVE_STAGES', 0, { min: 0 }),
    logsAnonLimit: {
      ratePerMinute: read.int('LOGS_ANON_RATE_PER_MINUTE', LOGS_ANON_DEFAULTS.ratePerMinute, { min: 0, max: 1_000_000 }),
      burst: read.int('LOGS_ANON_BURST', LOGS_ANON_DEFAULTS.burst, { min: 1, max: 1_000_000 }),
    },
    build: {
      version: read.str('APP_VERSION', '0.5.0'),
      commit: env.GIT_COMMIT?.trim() || null,
      builtAt: env.BUILT_AT?.trim() || null,
    },
    dashboard: { traceUrlTemplate: traceUrlTemplate(env.DASHBOARD_TRACE_URL_TEMPLATE, problems) },
    webhookAllowPrivateNetworks: read.bool('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
  };
  try {
    read.done();
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError([...err.problems, ...problems]);
    throw err;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
