// vitest globalSetup: makes sure the template database of the current migrations exists
// (TEST_TEMPLATE_DATABASE, named by their hash). It is built only when missing or unfinished (the
// hash is stored as the database COMMENT last), and it is left with connections disabled so that
// cloning never finds it busy. Templates of other migrations are left to their own runs; only the
// oldest beyond KEEP_TEMPLATES are dropped.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { MIGRATIONS_HASH, TEST_DATABASE_ADMIN_URL, TEST_TEMPLATE_DATABASE, databaseUrl, quoteIdent } from './config.js';

const dbRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'db');
const migrateScript = join(dbRoot, 'scripts', 'migrate.mjs');
/** Serialises concurrent test runs (several vitest processes on one server) while they check the template. */
const LOCK_KEY = 7_210_431_001;
/** Templates of other migrations kept on the server (the newest), for runs of other checkouts. */
const KEEP_TEMPLATES = 4;

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
  const expected = `migrations:${MIGRATIONS_HASH}`;
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
    // Other checkouts' templates (and the one shared name of before), oldest first beyond the newest few.
    const { rows: stale } = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname ~ '^po_test_template(_[0-9a-f]{12})?$' AND datname <> $1
       ORDER BY oid DESC OFFSET $2`,
      [TEST_TEMPLATE_DATABASE, KEEP_TEMPLATES],
    );
    for (const { datname } of stale) await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(datname)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
