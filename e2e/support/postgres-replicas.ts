import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { createDb, type Db } from '@po/db';
import type { TestDatabase } from '@po/testing';
import { ROOT } from '../../deploy/local/stack.mjs';
import { freePort } from './processes.js';
import { TcpProxy } from './tcp-proxy.js';

const run = promisify(execFile);

/** The application name the standby streams under, and the primary's synchronous_standby_names. */
const STANDBY_NAME = 'standby';

/** The newest installed server binaries, as deploy/local/ensure-infra.sh finds them; PG_BIN_DIR overrides. */
function binDir(): string {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'pg_ctl'))) : [];
  const newest = versions.sort((a, b) => Number(a) - Number(b)).at(-1);
  if (!newest) throw new Error(`no PostgreSQL server binaries in ${base}/*/bin: run bash deploy/local/ensure-infra.sh, or set PG_BIN_DIR`);
  return join(base, newest, 'bin');
}

// PostgreSQL refuses to run as root: as root, its tools run as the `postgres` OS user (which the
// server package creates), over directories that user owns.
const asRoot = process.getuid?.() === 0;

async function pgTool(tool: string, args: string[]): Promise<string> {
  const bin = join(binDir(), tool);
  const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  try {
    return (await run(command, argv, { timeout: 60_000 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${tool} ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`, { cause: err });
  }
}

function ownedByPostgres(dir: string): void {
  if (!asRoot) return;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(dir, id('-u'), id('-g'));
}

/** Pids of the processes alive now (not zombies) among `pids`. */
function alive(pids: number[]): number[] {
  return pids.filter((pid) => {
    try {
      return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** Every postmaster these helpers started and has not stopped: killed if the test process exits without cleaning up. */
const started = new Map<string, () => number | undefined>();
let exitHook = false;
function killLeftoversOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const pid of started.values()) {
      const p = pid();
      if (p !== undefined) process.kill(p, 'SIGKILL');
    }
  });
}

/** One PostgreSQL server on 127.0.0.1 (no Unix socket), trust authentication for `postgres`. */
export class PostgresNode {
  constructor(
    readonly name: string,
    readonly port: number,
    readonly dataDir: string,
  ) {}

  /** The server log (pg_ctl -l), beside the data directory. */
  get logFile(): string {
    return `${this.dataDir}.log`;
  }

  url(database = 'postgres'): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** The postmaster's pid while postmaster.pid exists. */
  postmasterPid(): number | undefined {
    try {
      return Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  }

  get running(): boolean {
    const pid = this.postmasterPid();
    return pid !== undefined && alive([pid]).length === 1;
  }

  async start(): Promise<void> {
    await pgTool('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '60', 'start']);
    started.set(this.dataDir, () => (this.running ? this.postmasterPid() : undefined));
    killLeftoversOnExit();
  }

  /** Fast shutdown: sessions are ended, a checkpoint is written. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    if (this.running) await pgTool('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
    started.delete(this.dataDir);
  }

  /**
   * kill -9 of the postmaster and every backend and auxiliary process at once, as when its node
   * dies: nothing is flushed, every connection is reset by the kernel.
   */
  async crash(): Promise<void> {
    const pid = this.postmasterPid();
    if (pid === undefined) return;
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      // already gone
    }
    for (const p of [pid, ...children]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    const until = Date.now() + 10_000;
    while (alive([pid, ...children]).length > 0) {
      if (Date.now() > until) throw new Error(`${this.name}: processes ${alive([pid, ...children]).join(' ')} survived SIGKILL`);
      await sleep(10);
    }
    started.delete(this.dataDir);
  }

  /** One statement on a connection of its own. */
  async query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = [], database = 'postgres'): Promise<R[]> {
    const client = new pg.Client({ host: '127.0.0.1', port: this.port, user: 'postgres', database });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** The last lines of the server log. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/**
 * A primary and a synchronous streaming standby, both private to the test, behind a TcpProxy
 * that stands for the Kubernetes Service the services reach the primary through.
 *
 * The primary commits with `synchronous_commit = on` and the standby named in
 * `synchronous_standby_names`: a commit is acknowledged only once the standby has flushed its WAL,
 * so promoting the standby loses nothing a client was told succeeded. `fsync = off` on both (for
 * speed) does not weaken that here: the test kills processes, not the machine, and what a server
 * wrote to the OS survives its processes.
 */
export class ReplicatedPostgres {
  /** The server that takes writes now. */
  primary: PostgresNode;
  /** The synchronous standby, until promoted. */
  standby: PostgresNode | undefined;
  /** The primary before the last promotion (stopped or left running by the test). */
  former: PostgresNode | undefined;
  private observer: { port: number; db: Db } | undefined;

  private constructor(
    readonly dir: string,
    readonly database: string,
    primary: PostgresNode,
    standby: PostgresNode,
    readonly proxy: TcpProxy,
  ) {
    this.primary = primary;
    this.standby = standby;
  }

  /**
   * initdb and start the primary, pg_basebackup -R the standby from it and wait until it streams
   * as the synchronous standby, put the proxy in front of the primary, and create and migrate
   * `database` through the proxy with the project's migrate command. Everything is on 127.0.0.1
   * and free ports; on a failure whatever was started is stopped and removed.
   */
  static async start(database: string): Promise<ReplicatedPostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'po-e2e-pg-'));
    ownedByPostgres(dir);
    const primary = new PostgresNode('primary', await freePort(), join(dir, 'primary'));
    const standby = new PostgresNode('standby', await freePort(), join(dir, 'standby'));
    let proxy: TcpProxy | undefined;
    try {
      await pgTool('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
      appendFileSync(
        join(primary.dataDir, 'postgresql.conf'),
        [
          '',
          `listen_addresses = '127.0.0.1'`,
          `port = ${primary.port}`,
          `unix_socket_directories = ''`,
          'wal_level = replica',
          'max_wal_senders = 4',
          `synchronous_standby_names = '${STANDBY_NAME}'`,
          'synchronous_commit = on',
          'fsync = off',
          'shared_buffers = 64MB',
          '',
        ].join('\n'),
      );
      await primary.start();
      await pgTool('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', standby.dataDir, '-R', '-X', 'stream', '-d', `application_name=${STANDBY_NAME}`, '--no-sync']);
      // The copied configuration is the primary's. Once promoted, the standby is a primary with no
      // standby of its own: one still naming a synchronous standby would hang every commit (what
      // Patroni and CloudNativePG do when the last replica is gone: the list becomes empty).
      appendFileSync(join(standby.dataDir, 'postgresql.conf'), `\nport = ${standby.port}\nsynchronous_standby_names = ''\n`);
      await standby.start();
      const until = Date.now() + 30_000;
      while ((await primary.query(`SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming' AND sync_state = 'sync'`, [STANDBY_NAME])).length === 0) {
        if (Date.now() > until) throw new Error(`the standby is not streaming as synchronous standby after 30 s:\n${standby.logTail()}`);
        await sleep(50);
      }
      proxy = await TcpProxy.start(primary.port);
      const replicas = new ReplicatedPostgres(dir, database, primary, standby, proxy);
      await replicas.migrate();
      return replicas;
    } catch (err) {
      await proxy?.close();
      for (const node of [standby, primary]) await node.stop('immediate').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** The services' DATABASE_URL: the database through the proxy. */
  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.proxy.port}/${this.database}`;
  }

  /**
   * For startCluster({ database }): `url` through the proxy for the services, and `db`, the
   * test's own client, always on the current primary (a new one after each promotion), so that
   * the checks read what the new primary holds. `drop` only closes that client: destroy() removes
   * the servers.
   */
  get testDatabase(): TestDatabase {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the getter below needs this instance
    const replicas = this;
    return {
      url: this.url,
      get db(): Db {
        return replicas.observerDb();
      },
      drop: () => replicas.closeObserver(),
    };
  }

  /**
   * Promotes the standby and makes it the primary: `promotedAt` is when it left recovery (polled
   * every 5 ms; pg_promote's own wait polls every 100 ms). Does not touch the proxy or the old
   * primary: the test decides what happens to them and when.
   */
  async promote(): Promise<{ calledAt: number; promotedAt: number }> {
    const standby = this.standby;
    if (!standby) throw new Error('no standby to promote');
    const client = new pg.Client({ host: '127.0.0.1', port: standby.port, user: 'postgres', database: 'postgres' });
    client.on('error', () => undefined);
    await client.connect();
    let promotedAt: number;
    const calledAt = Date.now();
    try {
      await client.query('SELECT pg_promote(false)');
      for (;;) {
        const { rows } = await client.query<{ recovering: boolean }>('SELECT pg_is_in_recovery() AS recovering');
        if (!rows[0]?.recovering) break;
        if (Date.now() - calledAt > 60_000) throw new Error(`promotion did not complete within 60 s:\n${standby.logTail()}`);
        await sleep(5);
      }
      promotedAt = Date.now();
    } finally {
      await client.end().catch(() => undefined);
    }
    // The test's own client leaves the old primary with it (the next `db` is on the new one).
    await this.closeObserver();
    this.former = this.primary;
    this.primary = standby;
    this.standby = undefined;
    return { calledAt, promotedAt };
  }

  /**
   * Makes a running server read-only without restarting it: default_transaction_read_only for
   * every transaction that starts from now on, sessions already open included (they re-read the
   * configuration before their next statement). A write then fails with SQLSTATE 25006.
   */
  static async makeReadOnly(node: PostgresNode): Promise<void> {
    await node.query('ALTER SYSTEM SET default_transaction_read_only = on');
    await node.query('SELECT pg_reload_conf()');
  }

  /** Waits until the standby has replayed everything the primary has written (bounded). */
  async waitStandbyCaughtUp(timeoutMs = 10_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const [row] = await this.primary.query<{ caught_up: boolean | null }>(
        `SELECT replay_lsn >= pg_current_wal_lsn() AS caught_up FROM pg_stat_replication WHERE application_name = $1`,
        [STANDBY_NAME],
      );
      if (row?.caught_up) return;
      if (Date.now() > until) throw new Error(`the standby did not catch up within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  /** Stops both servers (immediately), the proxy and the test's client, and removes the data directories. */
  async destroy(): Promise<void> {
    await this.closeObserver();
    await this.proxy.close().catch(() => undefined);
    for (const node of [this.primary, this.standby, this.former]) {
      if (node) await node.stop('immediate').catch(() => undefined);
      if (node?.running) await node.crash().catch(() => undefined);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async migrate(): Promise<void> {
    // A shell's migration URLs and folder would win over DATABASE_URL: as the test template's migrate does, ignore them.
    const env = { ...process.env, DATABASE_URL: this.url, MIGRATION_DATABASE_URL: '', DATABASE_DIRECT_URL: '', MIGRATIONS_DIR: '' };
    try {
      await run(process.execPath, ['libs/db/scripts/migrate.mjs', 'deploy'], { cwd: ROOT, env, timeout: 120_000 });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`migrate deploy of ${this.database} failed: ${e.stdout ?? ''}${e.stderr ?? e.message}`, { cause: err });
    }
  }

  private observerDb(): Db {
    if (this.observer?.port !== this.primary.port) {
      void this.closeObserver();
      this.observer = { port: this.primary.port, db: createDb(this.primary.url(this.database), { max: 2 }) };
    }
    return this.observer.db;
  }

  private async closeObserver(): Promise<void> {
    const observer = this.observer;
    this.observer = undefined;
    await observer?.db.$disconnect().catch(() => undefined);
  }
}
