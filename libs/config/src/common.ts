import type { EnvReader } from './env.js';
import { redisConfig, type RedisConfig } from './redis.js';

/** Settings every service shares. Service configs add their own on top. */
export interface CommonConfig {
  host: string;
  port: number;
  /**
   * GET /metrics listens here, apart from the API port, so the Ingress (which routes API ports
   * only) never exposes it and a NetworkPolicy can open it to Prometheus alone.
   */
  metricsPort: number;
  databaseUrl: string;
  /**
   * PEM of the CA that signed PostgreSQL's server certificate (DATABASE_CA_FILE), read once at
   * start-up; when set, connections use TLS and refuse a server that certificate does not verify.
   */
  databaseCa: string | null;
  /** REDIS_URL; with Sentinel or a cluster configured, `redis.topology` is what the services use. */
  redisUrl: string;
  redis: RedisConfig;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Key prefix of every BullMQ queue; lets several stacks (or test runs) share one Redis. */
  queuePrefix: string;
  shutdownTimeoutMs: number;
  /** PostgreSQL connections per process; each service also caps it by its own concurrency. */
  databasePoolMax: number;
  /** How long an idle PostgreSQL connection stays open in the pool (DATABASE_POOL_IDLE_SECONDS). */
  databasePoolIdleMs: number;
  /**
   * The server itself when DATABASE_URL is a transaction-mode pooler's (`pgbouncer=true`), for what
   * needs a session of its own: LISTEN, migrations (DATABASE_DIRECT_URL).
   */
  databaseDirectUrl: string | null;
  /** Bounds on every wait in PostgreSQL, ms (0: none): statement, lock, idle in a transaction. */
  databaseTimeouts: { statementMs: number; lockMs: number; idleInTransactionMs: number };
}

/**
 * Everything createDb (@po/db) takes from the configuration, for a pool of `applicationName`
 * (what pg_stat_activity calls its connections).
 */
export function databaseOptions(config: CommonConfig, applicationName: string) {
  return {
    idleMs: config.databasePoolIdleMs,
    ca: config.databaseCa,
    directUrl: config.databaseDirectUrl,
    timeouts: config.databaseTimeouts,
    applicationName,
  };
}

/**
 * `defaultMetricsPort` defaults to `defaultPort + 1000` (api-gateway 8080 → 9080, …): each service
 * has its own, so the five run side by side on one machine with no setting.
 */
export function commonConfig(env: EnvReader, defaultPort: number, defaultMetricsPort = defaultPort + 1000): CommonConfig {
  return {
    host: env.str('HOST', '127.0.0.1'),
    port: env.int('PORT', defaultPort, { min: 0, max: 65535 }),
    metricsPort: env.int('METRICS_PORT', defaultMetricsPort, { min: 0, max: 65535 }),
    databaseUrl: env.url('DATABASE_URL', 'postgresql://postgres@127.0.0.1:5432/pipeline_orchestration', [
      'postgres',
      'postgresql',
    ]),
    databaseCa: env.file('DATABASE_CA_FILE'),
    redisUrl: env.str('REDIS_URL', 'redis://127.0.0.1:6379'),
    redis: redisConfig(env),
    logLevel: env.oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    queuePrefix: queuePrefix(env),
    shutdownTimeoutMs: env.int('SHUTDOWN_TIMEOUT_MS', 10_000, { min: 0 }),
    databasePoolMax: env.int('DATABASE_POOL_MAX', 10, { min: 1, max: 200 }),
    databasePoolIdleMs: env.int('DATABASE_POOL_IDLE_SECONDS', 300, { min: 1, max: 86_400 }) * 1000,
    databaseDirectUrl: env.optionalUrl('DATABASE_DIRECT_URL', ['postgres', 'postgresql']),
    // A frozen or partitioned process keeps its row locks only this long (decision 0116).
    databaseTimeouts: {
      statementMs: env.int('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, { min: 0, max: 3_600_000 }),
      lockMs: env.int('DATABASE_LOCK_TIMEOUT_MS', 10_000, { min: 0, max: 3_600_000 }),
      idleInTransactionMs: env.int('DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 15_000, { min: 0, max: 3_600_000 }),
    },
  };
}

/** Braces would put a hash tag of their own in every key and undo the cluster layout (decision 0123). */
function queuePrefix(env: EnvReader): string {
  const prefix = env.str('QUEUE_PREFIX', 'po');
  if (/[{}\s]/.test(prefix)) env.problem(`QUEUE_PREFIX may not hold braces or spaces, got "${prefix}"`);
  return prefix;
}
