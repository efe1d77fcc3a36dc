#!/usr/bin/env node
// Migrations without Prisma's native engine (which cannot be downloaded here): the wasm schema
// engine over the pg adapter. Migrations use Prisma's standard layout (prisma/migrations/<ts>_<name>/
// migration.sql + migration_lock.toml), so `prisma migrate` stays usable where engines can be fetched.
//
//   node scripts/migrate.mjs [deploy]                 create the database if missing, apply pending migrations
//   node scripts/migrate.mjs dev --name NAME [--create-only]
//                                                     write a migration for schema.prisma changes, then apply it
//   node scripts/migrate.mjs check                    exit 1 if schema.prisma and the migrations disagree (CI)
//   node scripts/migrate.mjs status                   exit 1 unless the database is up to date
//   node scripts/migrate.mjs resolve --applied|--rolled-back NAME
//
// MIGRATION_DATABASE_URL (a role of its own for schema changes), else DATABASE_DIRECT_URL, else
// DATABASE_URL, else postgresql://postgres@127.0.0.1:5432/pipeline_orchestration; never a
// pgbouncer=true URL. DATABASE_CA_FILE: verify the server. MIGRATION_LOCK_TIMEOUT_MS (5000) and
// MIGRATION_LOCK_RETRIES (5): each migration's lock_timeout and how often a migration that could
// not get its locks is retried whole. MIGRATIONS_DIR: another migrations folder (tests, tools).
// --verbose prints the engine's log lines. How a migration.sql runs: scripts/migration-script.mjs.
import { mkdir, writeFile, access } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ensureDatabase,
  errorMessage,
  filters,
  lockfileContent,
  migrationSettings,
  openEngine,
  pgConfig as pgConfigOf,
  readMigrations as readMigrationsIn,
  root,
} from './engine.mjs';

const DEFAULT_URL = 'postgresql://postgres@127.0.0.1:5432/pipeline_orchestration';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    'create-only': { type: 'boolean', default: false },
    applied: { type: 'string' },
    'rolled-back': { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});
const command = positionals[0] ?? 'deploy';
let settings;
try {
  settings = migrationSettings(process.env, DEFAULT_URL);
} catch (err) {
  console.error(`migrate ${command} failed: ${errorMessage(err)}`);
  process.exit(1);
}
const { url, source, ca, migrationsDir } = settings;
const pgConfig = (target) => pgConfigOf(target, ca, source);
const readMigrations = () => readMigrationsIn(migrationsDir);
const log = (msg) => console.log(msg);

async function withEngine(fn) {
  const { lockTimeoutMs, lockRetries } = settings;
  const handle = await openEngine(url, { verbose: opts.verbose, ca, source, lockTimeoutMs, lockRetries, log });
  try {
    return await fn(handle.engine, handle);
  } finally {
    await handle.close();
  }
}

/**
 * applyMigrations, saying which migration failed and what to do. One whose lock retries ran out is
 * marked rolled back: its transaction left nothing behind, so the next deploy may simply try it
 * again (a failed mark would block every deploy until someone ran resolve).
 */
async function applyPending(engine, handle, migrationsList) {
  handle.migrationsList = migrationsList;
  handle.failure = undefined;
  try {
    return (await engine.applyMigrations({ migrationsList, filters })).appliedMigrationNames;
  } catch (err) {
    const { name, lockRetriesExhausted } = handle.failure ?? {};
    if (!name) throw err;
    if (!lockRetriesExhausted) {
      throw new Error(`${name} failed and is recorded as failed: fix the cause, then \`resolve --rolled-back ${name}\` and deploy again.\n${errorMessage(err)}`, {
        cause: err,
      });
    }
    await engine.markMigrationRolledBack({ migrationName: name });
    throw new Error(
      `${name} could not take its locks within MIGRATION_LOCK_TIMEOUT_MS (${settings.lockTimeoutMs} ms) in ${settings.lockRetries + 1} attempts. ` +
        'Nothing of it was applied and it is marked rolled back, so the next deploy tries it again. ' +
        "What it waited for: SELECT pid, state, xact_start, query FROM pg_stat_activity WHERE state <> 'idle' ORDER BY xact_start.",
      { cause: err },
    );
  }
}

const diffToSchema = (engine, migrationsList, schemaFiles) =>
  engine.diff({
    from: { tag: 'migrations', ...migrationsList },
    to: { tag: 'schemaDatamodel', files: schemaFiles },
    script: true,
    exitCode: true,
    filters,
  });

async function deploy() {
  const { config } = pgConfig(url);
  if (await ensureDatabase(config)) log(`Created database "${config.database}".`);
  const migrationsList = await readMigrations();
  const appliedMigrationNames = await withEngine((engine, handle) => applyPending(engine, handle, migrationsList));
  if (appliedMigrationNames.length === 0) log(`Database "${config.database}" is up to date (${migrationsList.migrationDirectories.length} migrations).`);
  else for (const name of appliedMigrationNames) log(`Applied ${name}`);
}

function timestamp(d = new Date()) {
  return d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

function destructiveWarnings(sql) {
  const patterns = [/\bDROP\s+(TABLE|COLUMN|TYPE|INDEX|CONSTRAINT)\b[^;]*/gi, /\bALTER\s+COLUMN\s+\S+\s+(SET\s+DATA\s+)?TYPE\b[^;]*/gi, /\bALTER\s+TYPE\b[^;]*/gi];
  return patterns.flatMap((re) => [...sql.matchAll(re)].map((m) => m[0].split('\n')[0]));
}

async function dev() {
  const slug = (opts.name ?? '').toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 200);
  if (!slug) throw new Error('dev needs --name NAME (letters, digits, underscores).');
  const { config } = pgConfig(url);
  if (await ensureDatabase(config)) log(`Created database "${config.database}".`);
  let migrationsList = await readMigrations();
  await withEngine(async (engine, handle) => {
    const { action } = await engine.devDiagnostic({ migrationsList, filters });
    if (action.tag === 'reset')
      throw new Error(`The development database needs a reset: ${action.reason}\nDrop database "${config.database}" and run dev again.`);
    for (const name of await applyPending(engine, handle, migrationsList)) log(`Applied ${name}`);

    const { exitCode, stdout } = await diffToSchema(engine, migrationsList, handle.schemaFiles);
    if (exitCode === 0) return log('schema.prisma matches the migrations: no migration created.');
    const dirName = `${timestamp()}_${slug}`;
    await mkdir(join(migrationsDir, dirName), { recursive: true });
    await writeFile(join(migrationsDir, dirName, 'migration.sql'), stdout ?? '');
    const lockPath = join(migrationsDir, 'migration_lock.toml');
    if (!(await access(lockPath).then(() => true, () => false))) await writeFile(lockPath, lockfileContent);
    log(`Created ${relative(root, join(migrationsDir, dirName, 'migration.sql'))}`);
    for (const w of destructiveWarnings(stdout ?? '')) log(`  warning: possible data loss or rewrite: ${w}`);
    if (opts['create-only']) return log('Not applied (--create-only).');
    migrationsList = await readMigrations();
    for (const name of await applyPending(engine, handle, migrationsList)) log(`Applied ${name}`);
  });
}

async function check() {
  const migrationsList = await readMigrations();
  const { exitCode, stdout } = await withEngine((engine, { schemaFiles }) => diffToSchema(engine, migrationsList, schemaFiles));
  if (exitCode === 0) return log(`schema.prisma and the ${migrationsList.migrationDirectories.length} migrations agree.`);
  console.error(`schema.prisma has changes that no migration contains:\n\n${stdout}\nRun: npm run migrate -w @po/db -- dev --name <name>`);
  process.exitCode = 1;
}

async function status() {
  const migrationsList = await readMigrations();
  const { config } = pgConfig(url);
  const d = await withEngine((engine) => engine.diagnoseMigrationHistory({ migrationsList, optInToShadowDatabase: false, filters }));
  const total = migrationsList.migrationDirectories.length;
  const problems = [];
  if (!d.hasMigrationsTable && total > 0) problems.push(`no migration applied yet (${total} pending)`);
  else if (d.history?.diagnostic === 'databaseIsBehind') problems.push(`pending: ${d.history.unappliedMigrationNames.join(', ')}`);
  else if (d.history?.diagnostic === 'migrationsDirectoryIsBehind')
    problems.push(`applied but missing locally: ${d.history.unpersistedMigrationNames.join(', ')}`);
  else if (d.history?.diagnostic === 'historiesDiverge')
    problems.push(`histories diverge after ${d.history.lastCommonMigrationName ?? '(start)'}: local ${d.history.unappliedMigrationNames.join(', ')}; database ${d.history.unpersistedMigrationNames.join(', ')}`);
  if (d.failedMigrationNames.length) problems.push(`failed: ${d.failedMigrationNames.join(', ')} (fix, then resolve --rolled-back NAME)`);
  if (d.editedMigrationNames.length) problems.push(`edited after being applied: ${d.editedMigrationNames.join(', ')}`);
  if (problems.length === 0) return log(`Database "${config.database}" is up to date (${total} migrations).`);
  console.error(`Database "${config.database}" is not up to date:\n  ${problems.join('\n  ')}`);
  process.exitCode = 1;
}

async function resolve() {
  const migrationsList = await readMigrations();
  if (opts.applied) {
    await withEngine((engine) => engine.markMigrationApplied({ migrationName: opts.applied, migrationsList }));
    log(`Marked ${opts.applied} as applied.`);
  } else if (opts['rolled-back']) {
    await withEngine((engine) => engine.markMigrationRolledBack({ migrationName: opts['rolled-back'] }));
    log(`Marked ${opts['rolled-back']} as rolled back.`);
  } else throw new Error('resolve needs --applied NAME or --rolled-back NAME.');
}

const commands = { deploy, dev, check, status, resolve };
const run = commands[command];
if (!run) {
  console.error(`Unknown command "${command}". Use one of: ${Object.keys(commands).join(', ')}.`);
  process.exit(2);
}
try {
  await run();
} catch (err) {
  console.error(`migrate ${command} failed: ${errorMessage(err)}`);
  process.exitCode = 1;
}
// The wasm engine leaves a 10 s setTimeout behind after each command: exit explicitly.
process.exit();
