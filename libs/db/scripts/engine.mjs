// Prisma's schema engine (the wasm build) on top of the pg driver adapter. Used by migrate.mjs only:
// the pg patches below must never be loaded into an application process. See
// docs/decisions/0002-prisma-offline-migrations.md.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';
import { planScript, runScript } from './migration-script.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const schemaPath = join(root, 'prisma', 'schema.prisma');
export const defaultMigrationsDir = join(root, 'prisma', 'migrations');
export const filters = { externalTables: [], externalEnums: [] };

// The engine reads pg_catalog columns of type "char" (oid 18) and name (19); adapter-pg has no
// column type for "char" and fails with "Column type 'char' could not be deserialized" (7.10 knows
// name, older versions did not). In this process only, pg reports both as text (25).
const addFields = pg.Result.prototype.addFields;
pg.Result.prototype.addFields = function (fields) {
  const mapped = fields.map((f) => (f.dataTypeID === 18 || f.dataTypeID === 19 ? { ...f, dataTypeID: 25 } : f));
  return addFields.call(this, mapped);
};

const quoteIdent = (name) => `"${name.replaceAll('"', '""')}"`;

/**
 * Discrete pg settings: with `connectionString`, pg lets the URL override `database` (shadow db bug).
 * `ca` (DATABASE_CA_FILE's PEM) turns on TLS that verifies the server, as in the services' pools.
 */
export function pgConfig(url, ca, source = 'DATABASE_URL') {
  let u;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`${source} is not a valid URL`);
  }
  if (u.protocol !== 'postgresql:' && u.protocol !== 'postgres:') throw new Error(`${source} must be a postgresql:// URL`);
  // Prisma's marker for a transaction-mode PgBouncer, not a server setting: never passed on.
  u.searchParams.delete('pgbouncer');
  const sslmode = u.searchParams.get('sslmode');
  const schema = u.searchParams.get('schema') ?? undefined;
  return {
    config: {
      // Unqualified names in migration.sql resolve through search_path, like Prisma's ?schema=.
      options: schema ? `-c search_path=${quoteIdent(schema)}` : undefined,
      host: decodeURIComponent(u.hostname) || '127.0.0.1',
      port: u.port ? Number(u.port) : 5432,
      user: decodeURIComponent(u.username) || 'postgres',
      password: u.password ? decodeURIComponent(u.password) : undefined,
      database: decodeURIComponent(u.pathname.slice(1)) || 'postgres',
      ssl: ca
        ? { ca, rejectUnauthorized: true }
        : sslmode && !['disable', 'allow', 'prefer'].includes(sslmode)
          ? { rejectUnauthorized: sslmode !== 'require' }
          : undefined,
    },
    schema,
  };
}

/** CREATE DATABASE if missing, through the `postgres` maintenance database. Returns true if created. */
export async function ensureDatabase(config) {
  const client = new pg.Client({ ...config, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [config.database]);
    if (rowCount) return false;
    await client.query(`CREATE DATABASE ${quoteIdent(config.database)}`);
    return true;
  } catch (err) {
    // A concurrent creator won the race: duplicate_database, or unique_violation on pg_database.
    if (err.code === '42P04' || err.code === '23505') return false;
    throw err;
  } finally {
    await client.end();
  }
}

/**
 * adapter-pg splits scripts on ";" (breaks on 'a;b' and DO $$ … $$), runs the pieces one by one (a
 * failing migration is left half applied) through pool.query, and the pool closes a connection
 * whose query failed: the engine's advisory lock went with it. Here a script runs on a connection
 * checked out for it (the engine's own, which the pool hands out again, last in first out) and
 * released intact after an SQL error; migration-script.mjs says how it runs.
 */
function migrationScripts(adapter, options) {
  adapter.executeScript = async (script) => {
    const client = await adapter.underlyingDriver().connect().catch((err) => adapter.onError(err));
    try {
      await runScript(client, script, { ...options, name: options.nameOf(script) });
    } catch (err) {
      options.onFailure(script, Boolean(err?.lockRetriesExhausted));
      adapter.onError(err);
    } finally {
      // Without an error argument: the session survives an SQL error (pg-pool itself drops a dead one).
      client.release();
    }
  };
  return adapter;
}

/** PrismaPg whose shadow database is dropped WITH (FORCE) after its pool is closed, and whose pools we can close. */
class MigrationPg extends PrismaPg {
  #config;
  #options;
  #scripts;
  #open = new Set();
  constructor(config, options, scripts) {
    // No idle timeout: closing the engine's idle connection would silently drop its advisory lock.
    config = { ...config, idleTimeoutMillis: 0 };
    super(config, options);
    this.#config = config;
    this.#options = options;
    this.#scripts = scripts;
  }
  async connect() {
    const adapter = migrationScripts(await super.connect(), this.#scripts);
    this.#track(adapter, adapter.dispose.bind(adapter));
    return adapter;
  }
  async connectToShadowDb() {
    const main = await this.connect();
    const database = `prisma_migrate_shadow_db_${randomUUID()}`;
    await main.executeScript(`CREATE DATABASE ${quoteIdent(database)}`);
    const shadow = migrationScripts(await new PrismaPg({ ...this.#config, database }, this.#options).connect(), this.#scripts);
    const closeShadow = shadow.dispose.bind(shadow);
    this.#track(shadow, async () => {
      try {
        await closeShadow();
        await main.executeScript(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
      } finally {
        await main.dispose();
      }
    });
    return shadow;
  }
  #track(adapter, dispose) {
    let done;
    adapter.dispose = () => (done ??= (this.#open.delete(adapter), dispose()));
    this.#open.add(adapter);
  }
  /** Closes every pool the engine left open (shadow databases first). */
  async closeAll() {
    for (const adapter of [...this.#open].reverse()) await adapter.dispose();
  }
}

let wasmReady = false;
function loadWasm() {
  if (wasmReady) return;
  // Node 20 cannot import a .wasm file: instantiate the wasm-bindgen module by hand.
  globalThis.PRISMA_WASM_PANIC_REGISTRY ??= {
    message: '',
    set_message(m) {
      this.message = `RuntimeError: ${m}`;
    },
  };
  const require = createRequire(import.meta.url);
  const wasmPath = join(dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')), 'schema_engine_bg.wasm');
  return readFile(wasmPath).then((bytes) => {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { './schema_engine_bg.js': bg });
    bg.__wbg_set_wasm(instance.exports);
    instance.exports.__wbindgen_start();
    wasmReady = true;
  });
}

const isPgBouncer = (url) => {
  try {
    return new URL(url).searchParams.get('pgbouncer')?.toLowerCase() === 'true';
  } catch {
    return false; // pgConfig says what is wrong with it
  }
};

function nonNegativeInteger(env, name, fallback, max) {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw new Error(`${name} must be a whole number from 0 to ${max} (got "${raw}")`);
  return Number(raw);
}

/**
 * Where and how the migrations connect. MIGRATION_DATABASE_URL lets them run as a role of their own
 * (one that may change the schema, while the services' DATABASE_URL role need not); else
 * DATABASE_DIRECT_URL (the server itself when DATABASE_URL goes through PgBouncer); else
 * DATABASE_URL. Migrations need a session (the engine's advisory lock, CONCURRENTLY, SET), which a
 * transaction-mode pooler does not keep: a `pgbouncer=true` URL is refused. DATABASE_CA_FILE
 * applies as it does in the services. MIGRATIONS_DIR (tests and tools) reads another folder.
 */
export function migrationSettings(env, defaultUrl) {
  const [source, url] = [
    ['MIGRATION_DATABASE_URL', env.MIGRATION_DATABASE_URL?.trim()],
    ['DATABASE_DIRECT_URL', env.DATABASE_DIRECT_URL?.trim()],
    ['DATABASE_URL', env.DATABASE_URL?.trim()],
  ].find(([, value]) => value) ?? ['the default URL', defaultUrl];
  if (isPgBouncer(url)) {
    throw new Error(
      `${source} points at PgBouncer (pgbouncer=true), but migrations need a session of their own (an advisory lock, CREATE INDEX CONCURRENTLY): set DATABASE_DIRECT_URL or MIGRATION_DATABASE_URL to the server itself`,
    );
  }
  const caFile = env.DATABASE_CA_FILE?.trim();
  let ca;
  if (caFile) {
    try {
      ca = readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new Error(`DATABASE_CA_FILE: cannot read ${caFile} (${err.code ?? err.message})`, { cause: err });
    }
  }
  return {
    url,
    source,
    ca,
    lockTimeoutMs: nonNegativeInteger(env, 'MIGRATION_LOCK_TIMEOUT_MS', 5000, 2_147_483_647),
    lockRetries: nonNegativeInteger(env, 'MIGRATION_LOCK_RETRIES', 5, 100),
    migrationsDir: env.MIGRATIONS_DIR?.trim() ? resolve(env.MIGRATIONS_DIR.trim()) : defaultMigrationsDir,
  };
}

/**
 * Opens the engine on `url`; call `close()` when done. Set `migrationsList` on the handle to have
 * scripts named in log lines and in `failure`: the last migration that failed, and whether its lock
 * retries ran out.
 */
export async function openEngine(url, { verbose = false, ca, source, lockTimeoutMs = 5000, lockRetries = 5, log = () => {} } = {}) {
  await loadWasm();
  const { config, schema } = pgConfig(url, ca, source);
  const handle = { migrationsList: undefined, failure: undefined };
  const nameOf = (script) => handle.migrationsList?.migrationDirectories.find((d) => d.migrationFile.content.value === script)?.path;
  const factory = new MigrationPg(config, schema ? { schema } : undefined, {
    lockTimeoutMs,
    lockRetries,
    log,
    sleep,
    nameOf: (script) => nameOf(script) ?? 'a migration',
    onFailure: (script, lockRetriesExhausted) => {
      const name = nameOf(script);
      handle.failure = name && { name, lockRetriesExhausted };
    },
  });
  const content = await readFile(schemaPath, 'utf8');
  const engineLog = (line) => {
    if (verbose) process.stderr.write(`[engine] ${line}\n`);
  };
  const engine = await bg.SchemaEngine.new(
    { datamodels: [[schemaPath, content]] },
    engineLog,
    bindMigrationAwareSqlAdapterFactory(factory),
  );
  return Object.assign(handle, {
    engine,
    config,
    schemaFiles: [{ path: schemaPath, content }],
    async close() {
      await factory.closeAll();
      engine.free();
    },
  });
}

export const lockfileContent =
  '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n';

/**
 * The migrations folder in the shape the engine expects (same as Prisma's CLI). A missing lock file
 * is supplied in memory: the engine needs it to pick the connector even when there is no migration.
 * A script that cannot run as either kind of migration.sql (migration-script.mjs) stops it here,
 * before anything is applied.
 */
export async function readMigrations(migrationsDir = defaultMigrationsDir) {
  const lockPath = 'migration_lock.toml';
  const lockContent = (await readFile(join(migrationsDir, lockPath), 'utf8').catch(() => null)) ?? lockfileContent;
  const entries = await readdir(migrationsDir, { withFileTypes: true }).catch(() => []);
  const migrationDirectories = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const content = await readFile(join(migrationsDir, entry.name, 'migration.sql'), 'utf8').then(
      (value) => ({ tag: 'ok', value }),
      (err) => ({ tag: 'error', value: err.message }),
    );
    if (content.tag === 'ok') {
      try {
        planScript(content.value);
      } catch (err) {
        throw new Error(`${entry.name}/migration.sql: ${err.message}`, { cause: err });
      }
    }
    migrationDirectories.push({ path: entry.name, migrationFile: { path: 'migration.sql', content } });
  }
  return {
    baseDir: migrationsDir,
    lockfile: { path: lockPath, content: lockContent },
    shadowDbInitScript: '',
    migrationDirectories,
  };
}

/** Engine errors carry a Rust span trace after the message ("   0: schema_engine_wasm::..."): drop it. */
export function errorMessage(err) {
  // pg reports a refused connection to a name with several addresses as an AggregateError without message.
  if (err instanceof AggregateError && !err.message && err.errors[0]) err = err.errors[0];
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : JSON.stringify(err);
  return message.split(/\n\s+0: /)[0].trim();
}
