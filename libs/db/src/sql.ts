import type pg from 'pg';

/**
 * Plain `pg` beside Prisma, for the hot paths (decision 0060): named statements are prepared once
 * per connection and then cost one round trip and no query planning or client-side compilation.
 * Prisma stays the owner of the schema and migrations and serves the cold paths; both share one
 * pool per process (see createDb).
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

export interface Sql extends Queryable {
  readonly pool: pg.Pool;
  /**
   * Runs `fn` in a READ COMMITTED transaction on one connection; commits when it resolves, rolls
   * back when it throws. `readOnly` makes it a REPEATABLE READ READ ONLY snapshot (multi-statement
   * reads that must not tear). `keyLookups` tells the planner that every statement of the
   * transaction reads rows by key (`enable_seqscan = off`, no parallel workers, for it alone): see createSql.
   * `customPlan` plans every statement of it for its parameters (`custom` statements on the pool).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: { readOnly?: boolean; keyLookups?: boolean; customPlan?: boolean }): Promise<T>;
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

/** Statements on one connection (or on the pool), as `sql` runs them. */
export function runner(client: pg.Pool | pg.ClientBase): Queryable {
  return {
    async query<R>(s: Statement, values: readonly unknown[] = []) {
      const result = await send(client, s.custom ? { text: s.text, values: values as unknown[] } : { name: s.name, text: s.text, values: values as unknown[] });
      return result.rows as R[];
    },
  };
}

/**
 * Statements on the pool. A transaction of `keyLookups` runs with sequential scans disabled: the
 * engine's statements find a handful of rows by key in tables that grow by thousands a second, and
 * while a young database's statistics still describe small tables the planner would rather scan
 * them whole and hash-join (seen at 2–3 ms a statement in the benchmark). Disabled is a cost, not a
 * ban: a statement without an index path still runs. Parallel workers are off too: starting one
 * costs more than any of these statements (a 64-pipeline read went parallel over a large history).
 */
export function createSql(pool: pg.Pool): Sql {
  const direct = runner(pool);
  const sql: Sql = {
    pool,
    // createDb's connections force generic plans (decision 0101), and PostgreSQL applies that to
    // unnamed statements too: a `custom` statement on the pool runs in a transaction of its own that
    // asks for a plan made for its parameters (decision 0111).
    query: (s, values) => (s.custom ? sql.transaction((tx) => tx.query(s, values), { customPlan: true }) : direct.query(s, values)),
    async transaction(fn, options = {}) {
      const client = await checkout(pool);
      let broken = false;
      try {
        await send(
          client,
          options.readOnly
            ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'
            : options.keyLookups
              ? // One round trip for both (the simple protocol takes several statements).
                'BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL max_parallel_workers_per_gather = 0'
              : options.customPlan
                ? 'BEGIN; SET LOCAL plan_cache_mode = force_custom_plan'
                : 'BEGIN',
        );
        const out = await fn(runner(client));
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

/** True for errors worth retrying the whole transaction for: deadlock, serialization, a lost connection. */
export function isTransientDbError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === '40P01' || code === '40001' || code === '57P01' || code === '57P02' || code === '57P03' || code === '08006' || code === '08003' || code === '08001') {
    return true;
  }
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  return /Connection terminated|ECONNRESET|ECONNREFUSED|Client has encountered a connection error|terminating connection/i.test(message);
}
