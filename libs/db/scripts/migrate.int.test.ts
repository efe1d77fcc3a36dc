// The wasm schema engine is internal to Prisma: this covers the migrate script end to end
// (fresh database → deploy → second deploy is a no-op → check is clean → status up to date).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_ADMIN_URL } from '@po/testing';

const script = join(dirname(fileURLToPath(import.meta.url)), 'migrate.mjs');
const migrations = readdirSync(join(dirname(script), '..', 'prisma', 'migrations'), { withFileTypes: true }).filter((e) => e.isDirectory());
const database = `po_test_migrate_${randomBytes(5).toString('hex')}`;
const url = Object.assign(new URL(TEST_DATABASE_ADMIN_URL), { pathname: `/${database}` }).toString();

function migrate(...args: string[]): Promise<{ code: number | null; out: string }> {
  return migrateOn(url, ...args);
}

function migrateOn(databaseUrl: string, ...args: string[]): Promise<{ code: number | null; out: string }> {
  return run(script, databaseUrl, ...args);
}

function run(scriptPath: string, databaseUrl: string, ...args: string[]): Promise<{ code: number | null; out: string }> {
  return runWith(scriptPath, { DATABASE_URL: databaseUrl }, ...args);
}

function runWith(scriptPath: string, env: Record<string, string>, ...args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [scriptPath, ...args], {
      env: { ...process.env, MIGRATION_DATABASE_URL: '', DATABASE_CA_FILE: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

async function admin(sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

async function appliedMigrations(): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ migration_name: string }>(
      'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name',
    );
    return rows.map((r) => r.migration_name);
  } finally {
    await client.end();
  }
}

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
      const res = await runWith(script, { DATABASE_URL: servicesUrl, MIGRATION_DATABASE_URL: ownUrl }, 'deploy');
      expect(res.code, res.out).toBe(0);
      expect(res.out).toContain(`Created database "${own}"`);
      const fallback = await runWith(script, { DATABASE_URL: servicesUrl }, 'status');
      expect(fallback.code).toBe(1);
      expect(fallback.out).toMatch(/denied access|po_no_such_role|authentication/);
    } finally {
      await admin(`DROP DATABASE IF EXISTS "${own}" WITH (FORCE)`);
    }
  });

  it('stops before connecting when DATABASE_CA_FILE cannot be read', async () => {
    const res = await runWith(script, { DATABASE_URL: url, DATABASE_CA_FILE: '/nonexistent/po-ca.crt' }, 'status');
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

  it('runs a migration as one script: semicolons in literals and DO blocks work, a failure leaves nothing behind', async () => {
    // A copy of libs/db with extra migrations, so the real migrations folder stays untouched.
    const dir = mkdtempSync(join(tmpdir(), 'po-migrate-'));
    const libDb = join(dirname(script), '..');
    const scratch = `${database}_script`;
    const scratchUrl = url.replace(`/${database}`, `/${scratch}`);
    try {
      cpSync(join(libDb, 'scripts'), join(dir, 'scripts'), { recursive: true });
      cpSync(join(libDb, 'prisma'), join(dir, 'prisma'), { recursive: true });
      cpSync(join(libDb, 'package.json'), join(dir, 'package.json'));
      symlinkSync(join(libDb, '..', '..', 'node_modules'), join(dir, 'node_modules'));
      const add = (name: string, sql: string) => {
        mkdirSync(join(dir, 'prisma', 'migrations', name));
        writeFileSync(join(dir, 'prisma', 'migrations', name, 'migration.sql'), sql);
      };
      const copy = join(dir, 'scripts', 'migrate.mjs');
      add('29990101000000_semicolons', `COMMENT ON TABLE "applications" IS 'a;b';\nDO $$ BEGIN PERFORM 1; END $$;\n`);
      const ok = await run(copy, scratchUrl, 'deploy');
      expect(ok.code, ok.out).toBe(0);
      const check = await run(copy, scratchUrl, 'check'); // replays the migrations on a shadow database
      expect(check.code, check.out).toBe(0);
      add('29990101000001_fails', 'CREATE TABLE "t_partial" (id int);\nCREATE TABLE "t_partial" (id int);\n');
      const res = await run(copy, scratchUrl, 'deploy');
      expect(res.code).toBe(1);
      expect(res.out).toContain('already exists');
      const client = new pg.Client({ connectionString: scratchUrl });
      await client.connect();
      try {
        const { rows } = await client.query(
          `SELECT obj_description('applications'::regclass) AS comment, to_regclass('t_partial') AS partial`,
        );
        expect(rows[0]).toEqual({ comment: 'a;b', partial: null });
      } finally {
        await client.end();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await admin(`DROP DATABASE IF EXISTS "${scratch}" WITH (FORCE)`);
    }
  });
});
