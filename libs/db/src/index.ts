// @po/db: the Prisma client of the product (schema in prisma/schema.prisma, migrations in
// prisma/migrations, applied by scripts/migrate.mjs). The client runs on @prisma/adapter-pg.
import { PrismaPg } from '@prisma/adapter-pg';
import pg, { type PoolConfig } from 'pg';
import { PrismaClient } from './generated/prisma/client.js';
import type { Db } from './db-types.js';
import { dropReadOnlyConnections, withTransactionSettings } from './connections.js';
import { createNotifications } from './notifications.js';
import { createSql, runner, type Queryable, type Sql } from './sql.js';

// Enums (values and types), model types, $Enums and the Prisma namespace.
export * from './generated/prisma/client.js';

export type { Db, DbOrTx } from './db-types.js';
export * from './repositories/index.js';
export { Batcher } from './batcher.js';
export { createSql, declaredStatements, isTransientDbError, jsonParam, queryableOf, statement, type Queryable, type Sql, type Statement } from './sql.js';
export { API_KEY_CACHE, API_KEY_CHANNEL, createApiKeyCache, type ApiKeyCache, type ApiKeyCacheOptions } from './api-key-cache.js';
export { createNotifiedCache, type NotifiedCache, type NotifiedCacheOptions } from './notified-cache.js';
export type { Notifications } from './notifications.js';
export { WORKER_SESSION_CACHE, WORKER_SESSION_CHANNEL, createWorkerSessionCache, type LiveSession } from './worker-session-cache.js';

export interface CreateDbOptions {
  /** PostgreSQL schema used by generated queries; defaults to the URL's `?schema=` or `public`. */
  schema?: string;
  /** Pool size; default 10. */
  max?: number;
  /** How long a connection may sit idle in the pool before it is closed; default 5 minutes. */
  idleMs?: number;
  /** PEM of the CA PostgreSQL's certificate must verify against (DATABASE_CA_FILE); see pgPoolConfig. */
  ca?: string | null;
  /**
   * Runs on each new connection before the pool hands it out (the pool waits for it; a rejection
   * fails that checkout): statements to prepare ahead, without racing the first caller's own.
   * Not run behind a pooler, where a connection's statements land on whichever server connection.
   */
  onConnect?: (connection: Queryable) => Promise<void>;
  /**
   * DATABASE_DIRECT_URL: the server itself, for what needs a session of its own (the LISTEN of the
   * notified caches). Default: `url`, unless `url` is a pooler's (`pgbouncer=true`): then nothing listens.
   */
  directUrl?: string | null;
  /** statement_timeout, lock_timeout and idle_in_transaction_session_timeout, ms; 0 or unset: the server's. */
  timeouts?: DatabaseTimeouts;
  /** application_name: how the server lists these connections (pg_stat_activity). */
  applicationName?: string;
}

export interface DatabaseTimeouts {
  statementMs?: number;
  lockMs?: number;
  idleInTransactionMs?: number;
}

/**
 * Discrete pg settings from a postgresql:// URL. Discrete settings, not `connectionString`: with a
 * connection string pg lets the URL override other settings such as `database`. With `ca`, TLS is
 * on and verifies the server against that CA (and its host name) whatever `sslmode` says: a CA was
 * given precisely so that an impostor or a plain-text downgrade is refused. `pgbouncer=true`
 * (Prisma's convention) says the URL is a transaction-mode pooler's: `pooled`.
 */
export function pgPoolConfig(url: string, ca?: string | null): PoolConfig & { schema?: string; pooled: boolean } {
  const u = new URL(url);
  if (u.protocol !== 'postgresql:' && u.protocol !== 'postgres:') throw new Error('database URL must be a postgresql:// URL');
  const sslmode = u.searchParams.get('sslmode');
  const config: PoolConfig & { schema?: string; pooled: boolean } = {
    host: decodeURIComponent(u.hostname) || '127.0.0.1',
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || 'postgres',
    database: decodeURIComponent(u.pathname.slice(1)) || 'postgres',
    pooled: u.searchParams.get('pgbouncer') === 'true',
  };
  if (u.password) config.password = decodeURIComponent(u.password);
  if (ca) config.ssl = { ca, rejectUnauthorized: true };
  else if (sslmode && !['disable', 'allow', 'prefer'].includes(sslmode)) config.ssl = { rejectUnauthorized: sslmode !== 'require' };
  const schema = u.searchParams.get('schema');
  if (schema) config.schema = schema;
  return config;
}

const sqlOfDb = new WeakMap<Db, Sql>();
const DEFAULT_IDLE_MS = 300_000;

/**
 * A PrismaClient on a pg pool of `max` connections (default 10). Call `$disconnect()` to close it
 * (it ends the pool). `sqlOf(db)` runs plain prepared statements on the same pool, and the notified
 * caches' LISTEN session copies the pool's options (on the direct server), so `ca` covers all three.
 *
 * Settings PostgreSQL takes per session (generic plans for named statements, decision 0101; the
 * timeouts; `search_path`) travel as startup options on a direct connection. A transaction-mode
 * pooler refuses or drops startup options, so behind one (decision 0116) every transaction sets
 * them with `SET LOCAL`: `sql`'s in its BEGIN round trip, Prisma's in one more statement after its
 * BEGIN. A statement outside a transaction gets the role's defaults there.
 */
export function createDb(url: string, options: CreateDbOptions = {}): Db {
  const { schema: urlSchema, pooled, ...config } = pgPoolConfig(url, options.ca);
  const schema = options.schema ?? urlSchema;
  if (pooled && schema && schema !== 'public') {
    // search_path cannot travel through the pooler, and single statements would miss a SET LOCAL.
    throw new Error(`?schema=${schema} is not supported with pgbouncer=true: set the role's search_path (ALTER ROLE … SET search_path) and drop it from the URL`);
  }
  const timeouts = timeoutSettings(options.timeouts ?? {});
  // Named statements (sql.ts) are the ones meant for a generic plan; left to choose, PostgreSQL
  // planned the creation statement afresh on every run (0.5 ms of planning for 0.5 ms of work, and a
  // generic plan runs it as fast). Unnamed statements — the custom ones and Prisma's — are planned
  // per run regardless of this setting.
  const session: [string, string][] = [['plan_cache_mode', 'force_generic_plan'], ...timeouts];
  if (!pooled) {
    const startup = session.map(([name, value]) => `-c ${name}=${value}`);
    // The adapter qualifies generated queries with `schema`; search_path covers $queryRaw as well.
    if (schema) startup.push(`-c search_path="${schema.replaceAll('"', '""')}"`);
    config.options = startup.join(' ');
  }
  if (options.applicationName) config.application_name = options.applicationName;
  // A request waiting for a connection gives up after 10 s (503 with Retry-After) rather than queueing forever.
  // Connections stay open through a lull (decision 0112): pg-pool's default closed them after 10 s
  // idle, and the next burst (a schedule's minute, a creation spike) met new backends whose empty
  // catalog caches and unparsed statements cost it 30–80 ms a request. TCP keepalive keeps the
  // idle ones known to NAT gateways and load balancers that drop silent connections.
  const { onConnect } = options;
  const pool = new pg.Pool({
    ...config,
    max: options.max ?? 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: options.idleMs ?? DEFAULT_IDLE_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 60_000,
    ...(onConnect && !pooled ? { onConnect: (client: pg.ClientBase) => onConnect(runner(client)) } : {}),
  });
  const notifications = createNotifications(
    options.directUrl ? directConfig(options.directUrl, options, config.application_name) : pooled ? null : { ...config, options: undefined, keepAlive: true },
    'DATABASE_URL is a pooler (pgbouncer=true) and DATABASE_DIRECT_URL is not set: the API-key and session caches are off',
  );
  // A connection PostgreSQL terminates (restart, failover, pg_terminate_backend) must not crash the
  // process: the pool only listens for errors on idle connections, so every connection gets its own
  // listener for the time it is checked out. The statement in flight fails on its own and the pool
  // replaces the connection.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  dropReadOnlyConnections(pool, () => notifications.reconnect());
  const adapter = new PrismaPg(pool, { ...(schema ? { schema } : {}), disposeExternalPool: true });
  const db = new PrismaClient({ adapter: pooled ? withTransactionSettings(adapter, timeouts) : adapter });
  sqlOfDb.set(db, createSql(pool, { pooled, transactionSettings: session, notifications }));
  return db;
}

function timeoutSettings(t: DatabaseTimeouts): [string, string][] {
  const out: [string, string][] = [];
  if (t.statementMs) out.push(['statement_timeout', String(t.statementMs)]);
  if (t.lockMs) out.push(['lock_timeout', String(t.lockMs)]);
  if (t.idleInTransactionMs) out.push(['idle_in_transaction_session_timeout', String(t.idleInTransactionMs)]);
  return out;
}

/** The LISTEN session's settings: the direct server, with the pool's TLS and name. */
function directConfig(directUrl: string, options: CreateDbOptions, applicationName: string | undefined): pg.ClientConfig {
  const { schema: _schema, pooled, ...config } = pgPoolConfig(directUrl, options.ca);
  if (pooled) throw new Error('DATABASE_DIRECT_URL must name the server itself, not a pooler (pgbouncer=true)');
  return { ...config, keepAlive: true, ...(applicationName ? { application_name: applicationName } : {}) };
}

/** The pool's size and use, and the LISTEN session (po_db_pool_* metrics). */
export function poolSample(db: Db): { max: number; total: number; idle: number; waiting: number; sessions: number } {
  const { pool, notifications } = sqlOf(db);
  return { max: pool.options.max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, sessions: notifications.connections };
}

/** Plain prepared statements on the pool of a client made by createDb. */
export function sqlOf(db: Db): Sql {
  const sql = sqlOfDb.get(db);
  if (!sql) throw new Error('sqlOf: this client was not made by createDb');
  return sql;
}

/**
 * True for a unique violation, optionally of one constraint: Prisma's P2002 (model queries), P2010
 * whose adapter cause is a UniqueConstraintViolation (`$queryRaw` / `$executeRaw`), or a plain pg
 * error 23505. `constraint` is the index/constraint name, e.g. `api_keys_key_hash_key`. With the pg
 * adapter the name is at `meta.driverAdapterError.cause.constraint.index`; when PostgreSQL gives
 * only the columns (`constraint.fields`), the name is matched as Prisma names it:
 * `<table>_<col>_<col>_key`.
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; meta?: unknown; constraint?: unknown };
  if (e.code === '23505') return constraint === undefined || e.constraint === constraint;
  const meta = (e.meta ?? {}) as {
    target?: unknown;
    driverAdapterError?: { cause?: { kind?: unknown; constraint?: { index?: unknown; fields?: unknown }; table?: unknown } };
  };
  const cause = meta.driverAdapterError?.cause;
  if (e.code !== 'P2002' && !(e.code === 'P2010' && cause?.kind === 'UniqueConstraintViolation')) return false;
  if (constraint === undefined) return true;

  const names = new Set<string>();
  let fields: string[] | undefined;
  let table: string | undefined;
  if (typeof cause?.constraint?.index === 'string') names.add(cause.constraint.index);
  if (isStringArray(cause?.constraint?.fields)) fields = cause.constraint.fields;
  if (typeof cause?.table === 'string') table = cause.table;
  // Native-engine shape: target is the constraint name or the list of fields.
  if (typeof meta.target === 'string') names.add(meta.target);
  else if (isStringArray(meta.target)) fields ??= meta.target;

  if (names.has(constraint)) return true;
  if (!fields || fields.length === 0) return false;
  const suffix = `_${fields.map(unquote).join('_')}_key`;
  return table !== undefined ? constraint === `${unquote(table)}${suffix}` : constraint.endsWith(suffix);
}

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const unquote = (s: string): string => s.replace(/^"(.*)"$/, '$1');
