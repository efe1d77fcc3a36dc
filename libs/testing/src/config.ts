// Connection settings of the test infrastructure. No @po/db import here: global-setup uses this too.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Base URL of the test PostgreSQL server (its database part is ignored). */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';

/** The same server, `postgres` maintenance database: used to create and drop test databases. */
export const TEST_DATABASE_ADMIN_URL = databaseUrl('postgres');

export const TEST_REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * The migrations every test database is made with: a hash of the migrations folder (names and
 * contents). Read once per process; a few dozen small files.
 */
export const MIGRATIONS_HASH = migrationsHash();

/**
 * Migrated template that every test database is cloned from (see global-setup.ts). Named by the
 * migrations it holds, so checkouts with different migrations on one server (a CI run beside a
 * branch under test) each clone their own instead of rebuilding one shared template under the
 * other's feet.
 */
export const TEST_TEMPLATE_DATABASE = `po_test_template_${MIGRATIONS_HASH.slice(0, 12)}`;

function migrationsHash(): string {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'db', 'prisma', 'migrations');
  const hash = createHash('sha256');
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
  for (const file of files) hash.update(`${file}\0`).update(readFileSync(join(dir, file))).update('\0');
  return hash.digest('hex');
}

/** TEST_DATABASE_URL pointing at another database. */
export function databaseUrl(database: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
