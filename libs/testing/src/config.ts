// Connection settings of the test infrastructure. No @po/db import here: global-setup uses this too.

/** Base URL of the test PostgreSQL server (its database part is ignored). */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';

/** The same server, `postgres` maintenance database: used to create and drop test databases. */
export const TEST_DATABASE_ADMIN_URL = databaseUrl('postgres');

export const TEST_REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Migrated template that every test database is cloned from (see global-setup.ts). */
export const TEST_TEMPLATE_DATABASE = 'po_test_template';

/** TEST_DATABASE_URL pointing at another database. */
export function databaseUrl(database: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;
