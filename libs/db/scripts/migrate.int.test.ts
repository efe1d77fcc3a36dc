// The wasm schema engine is internal to Prisma: this covers the migrate script end to end
// (fresh database → deploy → second deploy is a no-op → check is clean → status up to date), the
// connection it picks, and how a migration runs beside traffic (decision 0115).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEST_DATABASE_ADMIN_URL, createTestDatabase, type TestDatabase } from '@po/testing';

const script = join(dirname(fileURLToPath(import.meta.url)), 'migrate.mjs');
const productMigrations = join(dirname(script), '..', 'prisma', 'migrations');
const migrations = readdirSync(productMigrations, { withFileTypes: true }).filter((e) => e.isDirectory());
const database = `po_test_migrate_${randomBytes(5).toString('hex')}`;
const url = Object.assign(new URL(TEST_DATABASE_ADMIN_URL), { pathname: `/${database}` }).toString();

interface Run {
  code: number | null;
  out: string;
}

/** migrate.mjs as a process: its output so far, and its exit. Unset variables stay unset. */
function start(env: Record<string, string>, ...args: string[]): { output: () => string; done: Promise<Run> } {
  const child = spawn(process.execPath, [script, ...args], {
    env: {
      ...process.env,
      MIGRATION_DATABASE_URL: '',
      DATABASE_DIRECT_URL: '',
      DATABASE_CA_FILE: '',
      MIGRATIONS_DIR: '',
      MIGRATION_LOCK_TIMEOUT_MS: '',
      MIGRATION_LOCK_RETRIES: '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
  return { output: () => out, done };
}

const runWith = (env: Record<string, string>, ...args: string[]): Promise<Run> => start(env, ...args).done;
const migrateOn = (databaseUrl: string, ...args: string[]): Promise<Run> => runWith({ DATABASE_URL: databaseUrl }, ...args);
const migrate = (...args: string[]): Promise<Run> => migrateOn(url, ...args);

async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  return client;
}

async function on<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connect(databaseUrl);
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const admin = (sql: string): Promise<pg.QueryResult> => on(TEST_DATABASE_ADMIN_URL, (c) => c.query(sql));

async function appliedMigrations(): Promise<string[]> {
  const { rows } = await on(url, (c) =>
    c.query<{ migration_name: string }>(
      'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name',
    ),
  );
  return rows.map((r) => r.migration_name);
}

/** The test migrations' rows in _prisma_migrations, oldest first. */
async function history(databaseUrl: string): Promise<{ name: string; finished: boolean; rolledBack: boolean }[]> {
  const { rows } = await on(databaseUrl, (c) =>
    c.query(`SELECT migration_name AS name, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS "rolledBack"
             FROM _prisma_migrations WHERE migration_name LIKE '2999%' ORDER BY started_at`),
  );
  return rows;
}

const dirs: string[] = [];

/** A migrations folder for MIGRATIONS_DIR: the product's and `extra` (name → SQL), in a temporary directory. */
function migrationsWith(extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'po-migrations-'));
  dirs.push(dir);
  cpSync(productMigrations, dir, { recursive: true });
  for (const [name, sql] of Object.entries(extra)) add(dir, name, sql);
  return dir;
}

function add(dir: string, name: string, sql: string): void {
  mkdirSync(join(dir, name));
  writeFileSync(join(dir, name, 'migration.sql'), sql);
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  for (const end = Date.now() + timeoutMs; !(await check()); await sleep(50)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('migrate.mjs', () => {
  afterAll(async () => {
    await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  });

  it('deploys to a fresh database, then is a no-op, check is clean, status up to date', async () => {
    expect(migrations.length).toBeGreaterThan(0);

    const first = await migrate('deploy');
    expect(first.code, first.out).toBe(0);
    expect(first.out).toContain(`Created database "${database}"`);
    for (const m of migrations) expect(first.out).toContain(`Applied ${m.name}`);
    expect(await appliedMigrations()).toEqual(migrations.map((m) => m.name).sort());

    const second = await migrate('deploy');
    expect(second.code, second.out).toBe(0);
    expect(second.out).toContain('is up to date');
    expect(second.out).not.toContain('Applied');
    expect(await appliedMigrations()).toHaveLength(migrations.length);

    const check = await migrate('check');
    expect(check.code, check.out).toBe(0);

    const status = await migrate('status');
    expect(status.code, status.out).toBe(0);
    expect(status.out).toContain('is up to date');
  });

  it('status fails on a database without migrations; unknown commands fail', async () => {
    const empty = `${database}_empty`;
    await admin(`CREATE DATABASE "${empty}"`);
    try {
      const res = await migrateOn(url.replace(`/${database}`, `/${empty}`), 'status');
      expect(res.code).toBe(1);
      expect(res.out).toContain('not up to date');
    } finally {
      await admin(`DROP DATABASE IF EXISTS "${empty}" WITH (FORCE)`);
    }
    const unknown = await migrate('bogus');
    expect(unknown.code).not.toBe(0);
    expect(unknown.out).toContain('Unknown command');
  });

  it('connects with MIGRATION_DATABASE_URL when it is set, not with the services\' DATABASE_URL', async () => {
    const own = `${database}_own`;
    const ownUrl = url.replace(`/${database}`, `/${own}`);
    // A role that does not exist: deploy succeeds only if it never uses this URL.
    const servicesUrl = Object.assign(new URL(ownUrl), { username: 'po_no_such_role', password: 'x' }).toString();
    try {
      const res = await runWith({ DATABASE_URL: servicesUrl, MIGRATION_DATABASE_URL: ownUrl }, 'deploy');
      expect(res.code, res.out).toBe(0);
      expect(res.out).toContain(`Created database "${own}"`);
      const fallback = await runWith({ DATABASE_URL: servicesUrl }, 'status');
      expect(fallback.code).toBe(1);
      expect(fallback.out).toMatch(/denied access|po_no_such_role|authentication/);
    } finally {
      await admin(`DROP DATABASE IF EXISTS "${own}" WITH (FORCE)`);
    }
  });

  it('stops before connecting when DATABASE_CA_FILE cannot be read', async () => {
    const res = await runWith({ DATABASE_URL: url, DATABASE_CA_FILE: '/nonexistent/po-ca.crt' }, 'status');
    expect(res.code).toBe(1);
    expect(res.out).toContain('DATABASE_CA_FILE: cannot read /nonexistent/po-ca.crt (ENOENT)');
  });

  it('concurrent deploys create the database once and apply each migration once', async () => {
    const racy = `${database}_racy`;
    const racyUrl = url.replace(`/${database}`, `/${racy}`);
    try {
      const results = await Promise.all([1, 2, 3].map(() => migrateOn(racyUrl, 'deploy')));
      for (const r of results) expect(r.code, r.out).toBe(0);
      const applied = results.flatMap((r) => r.out.split('\n').filter((l) => l.startsWith('Applied ')));
      expect(applied).toHaveLength(migrations.length);
    } finally {
      await admin(`DROP DATABASE IF EXISTS "${racy}" WITH (FORCE)`);
    }
  });

  it('connects to MIGRATION_DATABASE_URL, else DATABASE_DIRECT_URL, else DATABASE_URL, and never through PgBouncer', async () => {
    const bouncer = Object.assign(new URL(url), { username: 'po_no_such_role', search: '?pgbouncer=true' }).toString();
    const direct = await runWith({ DATABASE_URL: bouncer, DATABASE_DIRECT_URL: url }, 'status');
    expect(direct.code, direct.out).toBe(0);
    // The parameter is Prisma's, not a server setting: it is dropped, not sent.
    const own = await runWith({ MIGRATION_DATABASE_URL: `${url}?pgbouncer=false`, DATABASE_DIRECT_URL: bouncer, DATABASE_URL: bouncer }, 'status');
    expect(own.code, own.out).toBe(0);

    const refusedEnvs: Record<string, string>[] = [{ DATABASE_URL: bouncer }, { MIGRATION_DATABASE_URL: bouncer, DATABASE_DIRECT_URL: url }];
    for (const env of refusedEnvs) {
      const refused = await runWith(env, 'deploy');
      expect(refused.code).toBe(1);
      expect(refused.out).toContain('points at PgBouncer (pgbouncer=true)');
      expect(refused.out).toContain('set DATABASE_DIRECT_URL or MIGRATION_DATABASE_URL to the server itself');
    }
    const badTimeout = await runWith({ DATABASE_URL: url, MIGRATION_LOCK_TIMEOUT_MS: '5s' }, 'status');
    expect(badTimeout.code).toBe(1);
    expect(badTimeout.out).toContain('MIGRATION_LOCK_TIMEOUT_MS must be a whole number');
  });

  it('refuses a migration that mixes CONCURRENTLY with other statements, before applying anything', async () => {
    const dir = migrationsWith({
      '29990101000000_fine': 'ALTER TABLE "stages" ADD COLUMN "fine" TEXT;',
      '29990101000001_mixed': 'ALTER TABLE "stages" ADD COLUMN "note" TEXT;\nCREATE INDEX CONCURRENTLY "stages_note_idx" ON "stages"("note");\n',
    });
    const res = await runWith({ DATABASE_URL: url, MIGRATIONS_DIR: dir }, 'deploy');
    expect(res.code).toBe(1);
    expect(res.out).toContain('29990101000001_mixed/migration.sql: it mixes CREATE/DROP INDEX CONCURRENTLY with other statements');
    expect(await history(url)).toEqual([]);
  });
});

describe('migrate.mjs beside traffic: lock_timeout, retries, CONCURRENTLY (decision 0115)', () => {
  let scratch: TestDatabase;
  let dir: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    scratch = await createTestDatabase(); // every product migration applied: the previous release
    dir = migrationsWith();
    env = { DATABASE_URL: scratch.url, MIGRATIONS_DIR: dir, MIGRATION_LOCK_TIMEOUT_MS: '200' };
  });
  afterEach(() => scratch.drop());

  /** A transaction holding ACCESS SHARE on stages, as a long report would: the migration's ALTER must wait for it. */
  async function longReader(): Promise<pg.Client> {
    const client = await connect(scratch.url);
    await client.query('BEGIN');
    await client.query('SELECT count(*) FROM "stages"');
    return client;
  }

  it('retries a migration whose lock did not come within lock_timeout, whole, and records it applied once', async () => {
    // The table comes first: were the failed attempt not rolled back whole, the retry would find it.
    add(dir, '29990101000000_add_column', 'CREATE TABLE "t_first" ("id" INT);\nALTER TABLE "stages" ADD COLUMN "note" TEXT;\n');
    const reader = await longReader();
    const run = start(env, 'deploy');
    try {
      await until('a retry', () => run.output().includes('retrying'));
    } finally {
      await reader.query('COMMIT');
      await reader.end();
    }
    const res = await run.done;
    expect(res.code, res.out).toBe(0);
    expect(res.out).toContain('29990101000000_add_column could not take a lock within 200 ms (attempt 1 of 6); rolled back, retrying in 1 s');
    expect(res.out).toContain('Applied 29990101000000_add_column');
    expect(await history(scratch.url)).toEqual([{ name: '29990101000000_add_column', finished: true, rolledBack: false }]);
  });

  it('marks a migration whose lock retries ran out rolled back, so the next deploy applies it', async () => {
    add(dir, '29990101000000_add_column', 'CREATE TABLE "t_first" ("id" INT);\nALTER TABLE "stages" ADD COLUMN "note" TEXT;\n');
    const reader = await longReader();
    let res: Run;
    try {
      res = await runWith({ ...env, MIGRATION_LOCK_RETRIES: '1' }, 'deploy');
    } finally {
      await reader.query('COMMIT');
      await reader.end();
    }
    expect(res.code).toBe(1);
    expect(res.out).toContain('29990101000000_add_column could not take its locks within MIGRATION_LOCK_TIMEOUT_MS (200 ms) in 2 attempts');
    expect(res.out).toContain('marked rolled back');
    expect(await history(scratch.url)).toEqual([{ name: '29990101000000_add_column', finished: false, rolledBack: true }]);
    expect((await on(scratch.url, (c) => c.query(`SELECT to_regclass('t_first') AS t`))).rows[0].t).toBeNull();

    const again = await runWith(env, 'deploy');
    expect(again.code, again.out).toBe(0);
    expect(again.out).toContain('Applied 29990101000000_add_column');
    const status = await runWith(env, 'status');
    expect(status.code, status.out).toBe(0);
  });

  it('builds indexes CONCURRENTLY one by one, without lock_timeout; after a failure, keeps what was built and rebuilds an INVALID index', async () => {
    await on(scratch.url, (c) => c.query('CREATE TABLE "t_dup" ("v" INT); INSERT INTO "t_dup" VALUES (1), (1)'));
    const name = '29990101000000_indexes';
    add(
      dir,
      name,
      [
        '-- Built outside a transaction, one statement at a time.',
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS "stages_pipeline_id_id_idx" ON "stages"("pipeline_id", "id");',
        'CREATE UNIQUE INDEX CONCURRENTLY "t_dup_v_key" ON "t_dup"("v");',
        'DROP INDEX CONCURRENTLY IF EXISTS "no_such_idx";',
      ].join('\n'),
    );
    const failed = await runWith(env, 'deploy');
    expect(failed.code).toBe(1);
    expect(failed.out).toContain('Unique constraint failed: t_dup_v_key');
    const validity = async () =>
      (await on(scratch.url, (c) => c.query(`SELECT indexrelid::regclass::text AS index, indisvalid AS valid FROM pg_index WHERE indexrelid::regclass::text IN ('stages_pipeline_id_id_idx', 't_dup_v_key') ORDER BY 1`))).rows;
    expect(await validity()).toEqual([
      { index: 'stages_pipeline_id_id_idx', valid: true },
      { index: 't_dup_v_key', valid: false },
    ]);

    // What the runbook says: fix the cause, mark the migration rolled back, deploy again.
    await on(scratch.url, (c) => c.query('DELETE FROM "t_dup" WHERE ctid <> (SELECT min(ctid) FROM "t_dup")'));
    const resolved = await runWith(env, 'resolve', '--rolled-back', name);
    expect(resolved.code, resolved.out).toBe(0);
    // A lock held far longer than MIGRATION_LOCK_TIMEOUT_MS: a concurrent build waits for it, harming no query.
    const holder = await connect(scratch.url);
    await holder.query('BEGIN; LOCK TABLE "t_dup" IN SHARE UPDATE EXCLUSIVE MODE');
    const run = start(env, 'deploy');
    try {
      // From another session: pg_stat_activity is a snapshot for the length of a transaction.
      await until('the rebuild to wait for the lock', async () => {
        const { rows } = await on(scratch.url, (c) => c.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`));
        return rows.length > 0;
      });
      await sleep(1000);
    } finally {
      await holder.query('COMMIT');
      await holder.end();
    }
    const res = await run.done;
    expect(res.code, res.out).toBe(0);
    expect(res.out).toContain('index public.stages_pipeline_id_id_idx exists and is valid; kept');
    expect(res.out).toContain('index public.t_dup_v_key is INVALID (an earlier build did not finish); dropping it to build it again');
    expect(res.out).not.toContain('retrying');
    expect(await validity()).toEqual([
      { index: 'stages_pipeline_id_id_idx', valid: true },
      { index: 't_dup_v_key', valid: true },
    ]);
    expect(await history(scratch.url)).toEqual([
      { name, finished: false, rolledBack: true },
      { name, finished: true, rolledBack: false },
    ]);
  });

  it('runs a migration as one script: semicolons in literals and DO blocks work, a failure leaves nothing behind', async () => {
    add(dir, '29990101000000_semicolons', `COMMENT ON TABLE "applications" IS 'a;b';\nDO $$ BEGIN PERFORM 1; END $$;\n`);
    const ok = await runWith(env, 'deploy');
    expect(ok.code, ok.out).toBe(0);
    const check = await runWith(env, 'check'); // replays the migrations on a shadow database
    expect(check.code, check.out).toBe(0);
    add(dir, '29990101000001_fails', 'CREATE TABLE "t_partial" (id int);\nCREATE TABLE "t_partial" (id int);\n');
    const res = await runWith(env, 'deploy');
    expect(res.code).toBe(1);
    expect(res.out).toContain('29990101000001_fails failed and is recorded as failed: fix the cause, then `resolve --rolled-back 29990101000001_fails`');
    expect(res.out).toContain('already exists');
    const { rows } = await on(scratch.url, (c) => c.query(`SELECT obj_description('applications'::regclass) AS comment, to_regclass('t_partial') AS partial`));
    expect(rows[0]).toEqual({ comment: 'a;b', partial: null });
  });
});
