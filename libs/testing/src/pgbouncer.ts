// A private PgBouncer for tests (issue 27): transaction pooling in front of the test PostgreSQL (or
// any server), on 127.0.0.1 and a free port, with its own directory; stop() ends it and removes it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_DATABASE_URL } from './config.js';

export interface PgBouncerOptions {
  /** The server behind it; default the test PostgreSQL. */
  target?: { host: string; port: number };
  poolMode?: 'transaction' | 'session';
  /** Server connections per (database, user); default 20. */
  poolSize?: number;
  /** Extra `[pgbouncer]` settings. */
  settings?: Record<string, string | number>;
}

export interface PgBouncer {
  readonly port: number;
  /** Its process id (for CPU figures). */
  readonly pid: number;
  /** postgresql:// URL of `database` through this PgBouncer, with `pgbouncer=true`. */
  url(database: string): string;
  /** Its log so far (for a failing test's message). */
  log(): string;
  stop(): Promise<void>;
}

/** A port nothing listens on now. */
export function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const server = new URL(TEST_DATABASE_URL);
  const target = options.target ?? { host: server.hostname || '127.0.0.1', port: Number(server.port || 5432) };
  const port = await freeTcpPort();
  const dir = mkdtempSync(join(tmpdir(), 'po-pgbouncer-'));
  // PgBouncer refuses to run as root: as root it switches to postgres (-u), which must own its directory.
  const asRoot = userInfo().uid === 0;
  const settings: Record<string, string | number> = {
    listen_addr: '127.0.0.1',
    listen_port: port,
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'users.txt'),
    pool_mode: options.poolMode ?? 'transaction',
    default_pool_size: options.poolSize ?? 20,
    max_client_conn: 2000,
    admin_users: 'postgres',
    logfile: join(dir, 'pgbouncer.log'),
    pidfile: join(dir, 'pgbouncer.pid'),
    ...options.settings,
  };
  const ini = [
    '[databases]',
    `* = host=${target.host} port=${target.port}`,
    '[pgbouncer]',
    ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`),
  ].join('\n');
  writeFileSync(join(dir, 'pgbouncer.ini'), `${ini}\n`);
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(join(dir, 'pgbouncer.log'), '');
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())) as [number, number];
    chmodSync(dir, 0o755);
    for (const f of ['', 'pgbouncer.ini', 'users.txt', 'pgbouncer.log']) chownSync(join(dir, f), uid, gid);
  }
  const args = [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
  const child: ChildProcess = spawn('pgbouncer', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const readLog = () => {
    try {
      return output + readFileSync(join(dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return output;
    }
  };
  const until = Date.now() + 10_000;
  while (!(await answers(port))) {
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start on ${port}:\n${readLog()}`);
    }
    await sleep(50);
  }
  return {
    port,
    pid: child.pid!,
    url: (database) => `postgresql://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}?pgbouncer=true`,
    log: readLog,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGTERM: PgBouncer's immediate shutdown (SIGINT would wait for clients to finish).
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(5000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
