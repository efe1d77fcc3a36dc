// Prisma's schema engine (the wasm build) on top of the pg driver adapter. Used by migrate.mjs only:
// the pg patches below must never be loaded into an application process. See
// docs/decisions/0002-prisma-offline-migrations.md.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const schemaPath = join(root, 'prisma', 'schema.prisma');
export const migrationsDir = join(root, 'prisma', 'migrations');
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
export function pgConfig(url, ca) {
  let u;
  try {
    u = new URL(url);
  } catch {
    throw new Error('DATABASE_URL is not a valid URL');
  }
  if (u.protocol !== 'postgresql:' && u.protocol !== 'postgres:') throw new Error('DATABASE_URL must be a postgresql:// URL');
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
 * adapter-pg splits scripts on ";" (breaks on 'a;b' and DO $$ … $$) and runs the pieces one by one
 * (a failing migration is left half applied). Send the script as one simple query instead, as
 * Prisma's native engine does: PostgreSQL runs it in one implicit transaction.
 */
function oneQueryScripts(adapter) {
  adapter.executeScript = async (script) => {
    try {
      await adapter.underlyingDriver().query(script);
    } catch (err) {
      adapter.onError(err);
    }
  };
  return adapter;
}

/** PrismaPg whose shadow database is dropped WITH (FORCE) after its pool is closed, and whose pools we can close. */
class MigrationPg extends PrismaPg {
  #config;
  #options;
  #open = new Set();
  constructor(config, options) {
    super(config, options);
    this.#config = config;
    this.#options = options;
  }
  async connect() {
    const adapter = oneQueryScripts(await super.connect());
    this.#track(adapter, adapter.dispose.bind(adapter));
    return adapter;
  }
  async connectToShadowDb() {
    const main = await this.connect();
    const database = `prisma_migrate_shadow_db_${randomUUID()}`;
    await main.executeScript(`CREATE DATABASE ${quoteIdent(database)}`);
    const shadow = oneQueryScripts(await new PrismaPg({ ...this.#config, database }, this.#options).connect());
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

/**
 * Where and how the migrations connect. MIGRATION_DATABASE_URL lets them run as a role of their own
 * (one that may change the schema, while the services' DATABASE_URL role need not); without it they
 * use DATABASE_URL. DATABASE_CA_FILE applies to both, as it does in the services.
 */
export function migrationSettings(env, defaultUrl) {
  const url = env.MIGRATION_DATABASE_URL?.trim() || env.DATABASE_URL?.trim() || defaultUrl;
  const caFile = env.DATABASE_CA_FILE?.trim();
  let ca;
  if (caFile) {
    try {
      ca = readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new Error(`DATABASE_CA_FILE: cannot read ${caFile} (${err.code ?? err.message})`, { cause: err });
    }
  }
  return { url, ca };
}

/** Opens the engine on `url`; call `close()` when done. */
export async function openEngine(url, { verbose = false, ca } = {}) {
  await loadWasm();
  const { config, schema } = pgConfig(url, ca);
  const factory = new MigrationPg(config, schema ? { schema } : undefined);
  const content = await readFile(schemaPath, 'utf8');
  const log = (line) => {
    if (verbose) process.stderr.write(`[engine] ${line}\n`);
  };
  const engine = await bg.SchemaEngine.new(
    { datamodels: [[schemaPath, content]] },
    log,
    bindMigrationAwareSqlAdapterFactory(factory),
  );
  return {
    engine,
    config,
    schemaFiles: [{ path: schemaPath, content }],
    async close() {
      await factory.closeAll();
      engine.free();
    },
  };
}

export const lockfileContent =
  '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n';

/**
 * The migrations folder in the shape the engine expects (same as Prisma's CLI). A missing lock file
 * is supplied in memory: the engine needs it to pick the connector even when there is no migration.
 */
export async function readMigrations() {
  const lockPath = 'migration_lock.toml';
  const lockContent = (await readFile(join(migrationsDir, lockPath), 'utf8').catch(() => null)) ?? lockfileContent;
  const entries = await readdir(migrationsDir, { withFileTypes: true }).catch(() => []);
  const migrationDirectories = [];
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    const content = await readFile(join(migrationsDir, entry.name, 'migration.sql'), 'utf8').then(
      (value) => ({ tag: 'ok', value }),
      (err) => ({ tag: 'error', value: err.message }),
    );
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
