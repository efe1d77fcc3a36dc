import type { EnvReader } from './env.js';

/** Settings every service shares. Service configs add their own on top. */
export interface CommonConfig {
  host: string;
  port: number;
  databaseUrl: string;
  redisUrl: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Key prefix of every BullMQ queue; lets several stacks (or test runs) share one Redis. */
  queuePrefix: string;
  shutdownTimeoutMs: number;
  /** PostgreSQL connections per process; each service also caps it by its own concurrency. */
  databasePoolMax: number;
}

export function commonConfig(env: EnvReader, defaultPort: number): CommonConfig {
  return {
    host: env.str('HOST', '127.0.0.1'),
    port: env.int('PORT', defaultPort, { min: 0, max: 65535 }),
    databaseUrl: env.url('DATABASE_URL', 'postgresql://postgres@127.0.0.1:5432/pipeline_orchestration', [
      'postgres',
      'postgresql',
    ]),
    redisUrl: env.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis', 'rediss']),
    logLevel: env.oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    queuePrefix: env.str('QUEUE_PREFIX', 'po'),
    shutdownTimeoutMs: env.int('SHUTDOWN_TIMEOUT_MS', 10_000, { min: 0 }),
    databasePoolMax: env.int('DATABASE_POOL_MAX', 10, { min: 1, max: 200 }),
  };
}
