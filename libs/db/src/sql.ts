import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { DbOrTx } from './db-types.js';
import { createNotifications, type Notifications } from './notifications.js';

/**
 * Plain `pg` beside Prisma, for the hot paths (decision 0060): named statements are prepared once
 * per connection and then cost one round trip and no query planning or client-side compilation.
 * Prisma stays the owner of the schema and migrations and serves the cold paths; both share one
 * pool per process (see createDb).
 *
 * Behind a transaction-mode pooler (PgBouncer, `pgbouncer=true`; decision 0116) consecutive
 * transactions of one client connection land on different server connections, so what a
 * connection has prepared cannot be known from the client side. Each transaction then asks its
 * server connection which statements it holds (in the BEGIN round trip) and prepares only the
 * missing ones, under a name that carries a hash of the text, so two processes (or two releases
 * during a rollout) sharing a server connection can only ever share a statement of the same text.
 * A statement outside a transaction gets a transaction of its own there.
 */

/** A named SQL statement; the name must be unique in the process and its text never change. */
export interface Statement {
  readonly name: string;
  readonly text: string;
  /** Planned for its actual parameters on every run (see `statement`). */
  readonly custom?: boolean;
}

/**
 * JSON text of a parameter. A lone surrogate becomes U+FFFD, as pg's UTF-8 encoding of a text
 * parameter makes it: jsonb refuses its `\ud800` escape, which would fail the whole statement.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
export const jsonParam = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD') : v));

const names = new Map<string, { text: string; custom: boolean }>();
/** Behind a pooler: the name a statement is prepared under on the server → its text. */
const pooledNames = new Map<string, string>();
const pooledNameOf = new Map<string, string>();

/** `name_<12 hex of the text's SHA-256>`: equal names on a shared server connection mean equal text. */
function pooledName(name: string, text: string): string {
  const wire = `${name.slice(0, 48)}_${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
  pooledNames.set(wire, text);
  pooledNameOf.set(name, wire);
  return wire;
}

/**
 * Declares a statement. By default it is prepared once per connection and executed with
 * PostgreSQL's generic plan (createDb's pools force it): right for statements that find rows by key.
 * `{ plan: 'custom' }` plans it for its actual parameters every time (one parse and plan per run):
 * for set-based statements over arrays, whose best plan depends on how many rows the arrays hold
 * and on how big the tables are now — a generic plan made while the tables were small (a young
 * database) keeps scanning them whole long after they have grown. On the pool such a statement
 * runs in a transaction of its own that lifts the pools' forced generic plans (three round trips:
 * for sweeps and cleanups, not per-stage work); inside a caller's transaction it is sent unnamed but
 * planned as that transaction's `plan_cache_mode` says (a keyLookups transaction: generic, with no
 * sequential scan or parallel workers). Declaring one name twice with different text is a bug.
 */
export function statement(name: string, text: string, options: { plan?: 'generic' | 'custom' } = {}): Statement {
  const known = names.get(name);
  if (known !== undefined && known.text !== text) throw new Error(`statement ${name} declared twice with different text`);
  const custom = options.plan === 'custom';
  names.set(name, { text, custom });
  if (!custom) pooledName(name, text);
  return custom ? { name, text, custom: true } : { name, text };
}

/**
 * Every statement declared so far (by the modules loaded), name → text and whether it is planned
 * per run: for tools that inspect the hot paths' plans (e2e/bench/explain.mjs).
 */
export function declaredStatements(): ReadonlyMap<string, { text: string; custom: boolean }> {
  return new Map([...names].map(([name, s]) => [name, { ...s }]));
}

/** What runs statements: the pool (one statement, autocommit) or a transaction's client. */
export interface Queryable {
  query<R>(statement: Statement, values?: readonly unknown[]): Promise<R[]>;
}

/**
 * Statements inside a Prisma interactive transaction, sent unprepared (planned per run): for the
 * cold paths that hold one and run a plain-pg operation in it (a schedule's guarded fire, Queue
 * promotion, POST …/trigger and …/backfill). Rows come as Prisma returns them (int8 as bigint).
 */
export function queryableOf(tx: DbOrTx): Queryable {
  return { query: <R>(s: Statement, values: readonly unknown[] = []) => tx.$queryRawUnsafe<R[]>(s.text, ...values) };
}

export interface Sql extends Queryable {
  readonly pool: pg.Pool;
  /** True behind a transaction-mode pooler (`pgbouncer=true`). */
  readonly pooled: boolean;
  /** The process's one LISTEN session (notified caches). */
  readonly notifications: Notifications;
  /**
   * Runs `fn` in a READ COMMITTED transaction on one connection; commits when it resolves, rolls
   * back when it throws. `readOnly` makes it a REPEATABLE READ READ ONLY snapshot (multi-statement
   * reads that must not tear). `keyLookups` tells the planner that every statement of the
   * transaction reads rows by key (`enable_seqscan = off`, no parallel workers, for it alone): see createSql.
   * `customPlan` plans every statement of it for its parameters (`custom` statements on the pool).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

export interface TransactionOptions {
  readOnly?: boolean;
  keyLookups?: boolean;
  customPlan?: boolean;
}

export interface SqlOptions {
  /** Behind a transaction-mode pooler: see the top of this file. */
  pooled?: boolean;
  /**
   * Settings every transaction begins with (`SET LOCAL`): behind a pooler, what a direct
   * connection gets once as startup options (createDb).
   */
  transactionSettings?: readonly (readonly [string, string])[];
  /** The LISTEN session of this pool's process; default: none (nothing listens). */
  notifications?: Notifications;
}

/*
 * pg is called in its callback form, each call wrapped in a promise of ours. In its promise form,
 * measured on Node 24, 20–25% of what a connection allocates (rows, field descriptions, the Query)
 * stayed reachable past each scavenge and was copied into the old generation until a full
 * collection freed it; with callbacks, none (docs/performance.md, decision 0113). In the services
 * that was the bulk of the scavenge pauses.
 */
function send(client: pg.Pool | pg.ClientBase, config: string | pg.QueryConfig): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    client.query(config as pg.QueryConfig, (err: Error | undefined, result: pg.QueryResult) => (err ? reject(err) : resolve(result)));
  });
}

function checkout(pool: pg.Pool): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((err, client) => (err || !client ? reject(err ?? new Error('pool gave no client')) : resolve(client)));
  });
}

/**
 * Statements on one connection (or on the pool), as `sql` runs them. `pooledNames`: named
 * statements go under pooledName (behind a pooler, inside a transaction that adopted what its
 * server connection holds).
 */
export function runner(client: pg.Pool | pg.ClientBase, mode: { pooledNames?: boolean } = {}): Queryable {
  return {
    async query<R>(s: Statement, values: readonly unknown[] = []) {
      const name = s.custom ? undefined : mode.pooledNames ? pooledNameOf.get(s.name) : s.name;
      const result = await send(client, name === undefined ? { text: s.text, values: values as unknown[] } : { name, text: s.text, values: values as unknown[] });
      return result.rows as R[];
    },
  };
}

/** A SQL string literal (for settings in simple-protocol text; values are ours, never a client's). */
export const quoteLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * What the server connection a pooled transaction landed on has prepared, as pg's own record of
 * its connection, so pg sends Parse for exactly the statements that are missing there. pg keeps
 * that record per client connection (`connection.parsedStatements`), which behind a pooler is not
 * per server connection: it is replaced at the start of every transaction.
 */
function adoptPrepared(client: pg.PoolClient, onServer: readonly string[]): void {
  const parsed: Record<string, string> = {};
  for (const name of onServer) {
    const text = pooledNames.get(name);
    if (text !== undefined) parsed[name] = text;
  }
  (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements = parsed;
}

/**
 * Statements on the pool. A transaction of `keyLookups` runs with sequential scans disabled: the
 * engine's statements find a handful of rows by key in tables that grow by thousands a second, and
 * while a young database's statistics still describe small tables the planner would rather scan
 * them whole and hash-join (seen at 2–3 ms a statement in the benchmark). Disabled is a cost, not a
 * ban: a statement without an index path still runs. Parallel workers are off too: starting one
 * costs more than any of these statements (a 64-pipeline read went parallel over a large history).
 */
export function createSql(pool: pg.Pool, options: SqlOptions = {}): Sql {
  const pooled = options.pooled ?? false;
  const direct = runner(pool);
  const beginOf = (o: TransactionOptions) => {
    const head = o.readOnly ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN';
    // Later settings win: a customPlan transaction's plan_cache_mode over the pool's.
    const settings = new Map<string, string>(pooled ? options.transactionSettings : []);
    if (o.keyLookups) settings.set('enable_seqscan', 'off').set('max_parallel_workers_per_gather', '0');
    if (o.customPlan) settings.set('plan_cache_mode', 'force_custom_plan');
    // One round trip for all (the simple protocol takes several statements). Behind a pooler the
    // last one reads what the server connection holds prepared, from the function behind the
    // pg_prepared_statements view (planned in 6 µs instead of 19). SET LOCAL is not planned: one
    // SELECT of set_config calls instead cost 0.13 ms a transaction against 0.09, measured.
    const statements = [head, ...[...settings].map(([name, value]) => `SET LOCAL ${name} = ${quoteLiteral(value)}`)];
    if (pooled) statements.push('SELECT name FROM pg_prepared_statement()');
    return statements.join('; ');
  };
  // Eight combinations of options: each text is made once.
  const begins = new Map<number, string>();
  const begin = (o: TransactionOptions) => {
    const key = (o.readOnly ? 1 : 0) | (o.keyLookups ? 2 : 0) | (o.customPlan ? 4 : 0);
    let text = begins.get(key);
    if (text === undefined) begins.set(key, (text = beginOf(o)));
    return text;
  };
  const sql: Sql = {
    pool,
    pooled,
    notifications: options.notifications ?? createNotifications(null, 'no session connection was configured'),
    // createDb's connections force generic plans (decision 0101), and PostgreSQL applies that to
    // unnamed statements too: a `custom` statement on the pool runs in a transaction of its own that
    // asks for a plan made for its parameters (decision 0111). Behind a pooler a named one runs in a
    // transaction of its own too, where its server connection's prepared statement can be found
    // (two more round trips, for no planning: 0.1–0.7 ms each, measured; decision 0116).
    query: (s, values) =>
      s.custom ? sql.transaction((tx) => tx.query(s, values), { customPlan: true }) : pooled ? sql.transaction((tx) => tx.query(s, values)) : direct.query(s, values),
    async transaction(fn, options = {}) {
      const client = await checkout(pool);
      let broken = false;
      try {
        const began = await send(client, begin(options));
        if (pooled) adoptPrepared(client, ((began as unknown as pg.QueryResult[]).at(-1)?.rows ?? []).map((r: { name: string }) => r.name));
        const out = await fn(runner(client, { pooledNames: pooled }));
        await send(client, 'COMMIT');
        return out;
      } catch (err) {
        try {
          await send(client, 'ROLLBACK');
        } catch {
          // The connection itself failed: do not hand it back to the pool.
          broken = true;
        }
        throw err;
      } finally {
        client.release(broken);
      }
    },
  };
  return sql;
}

/**
 * True for errors worth retrying the whole transaction for: deadlock, serialization, a lost
 * connection, a lock or statement timeout (the other side's transaction ends, or is ended by its
 * own timeouts), and a server that turned read-only (a failover: createDb drops such connections,
 * and the next attempt reaches the new primary).
 */
export function isTransientDbError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TRANSIENT_SQLSTATES.has(code)) return true;
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  return /Connection terminated|ECONNRESET|ECONNREFUSED|Client has encountered a connection error|terminating connection/i.test(message);
}

const TRANSIENT_SQLSTATES = new Set(['40P01', '40001', '57P01', '57P02', '57P03', '08006', '08003', '08001', '55P03', '57014', '25006', '25P03']);
