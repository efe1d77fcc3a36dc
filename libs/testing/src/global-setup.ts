// vitest globalSetup: makes sure the template database `po_test_template` holds the current
// migrations. It is rebuilt only when the migrations folder changed (its hash is stored as the
// database COMMENT), and it is left with connections disabled so that cloning never finds it busy.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { TEST_DATABASE_ADMIN_URL, TEST_TEMPLATE_DATABASE, databaseUrl, quoteIdent } from './config.js';

const dbRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'db');
const migrationsDir = join(dbRoot, 'prisma', 'migrations');
const migrateScript = join(dbRoot, 'scripts', 'migrate.mjs');
/** Serialises concurrent test runs (several vitest processes on one server) while they check the template. */
const LOCK_KEY = 7_210_431_001;

async function migrationsHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await readdir(migrationsDir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => relative(migrationsDir, join(e.parentPath, e.name)))
    .sort();
  for (const file of files) hash.update(`${file}\0`).update(await readFile(join(migrationsDir, file))).update('\0');
  return hash.digest('hex');
}

function deploy(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [migrateScript, 'deploy'], {
      // The template goes where `url` says: a shell's migration or direct URL, or another
      // migrations folder, would send migrate elsewhere (it prefers them to DATABASE_URL).
      env: { ...process.env, DATABASE_URL: url, MIGRATION_DATABASE_URL: '', DATABASE_DIRECT_URL: '', MIGRATIONS_DIR: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`migrate deploy of ${TEST_TEMPLATE_DATABASE} failed (exit ${code}):\n${output}`)),
    );
  });
}

export default async function globalSetup(): Promise<void> {
  const expected = `migrations:${await migrationsHash()}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    const { rows } = await admin.query<{ comment: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`,
      [TEST_TEMPLATE_DATABASE],
    );
    const template = quoteIdent(TEST_TEMPLATE_DATABASE);
    if (rows[0]?.comment !== expected) {
      await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${template}`);
      await deploy(databaseUrl(TEST_TEMPLATE_DATABASE));
      // Set last: a template whose deploy failed has no comment and is rebuilt next time.
      await admin.query(`COMMENT ON DATABASE ${template} IS ${pg.escapeLiteral(expected)}`);
    }
    await admin.query(`ALTER DATABASE ${template} WITH ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [TEST_TEMPLATE_DATABASE]);
  } finally {
    await admin.end();
  }
}
