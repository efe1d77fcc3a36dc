import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './processes.js';

/**
 * A private `redis-server` on 127.0.0.1 and a free port, with its own data directory and AOF
 * persistence fsynced on every write (`appendfsync always`, no RDB snapshots), so a test can stop
 * it gracefully or kill -9 it and start it again on the same port and data: every write Redis
 * acknowledged is still there afterwards.
 */
export class RedisServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  readonly lines: string[] = [];

  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'po-e2e-redis-')));
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the server (again) on the same port and directory; resolves once it answers PING. */
  async start(timeoutMs = 10_000): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--daemonize', 'no'];
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.lines.push(line));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.child = child;
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (!this.running) throw new Error(`redis-server exited at start:\n${this.lines.slice(-20).join('\n')}`);
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        // PING answers LOADING while the AOF is replayed: wait for a real answer.
        if ((await probe.ping()) === 'PONG') return;
      } catch {
        // not accepting connections yet, or still loading
      } finally {
        probe.disconnect();
      }
      await sleep(50);
    }
    throw new Error(`redis-server on port ${this.port} not ready after ${timeoutMs} ms`);
  }

  /** SIGTERM: Redis shuts down gracefully (flushes the AOF, closes clients). */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.child!.kill('SIGTERM');
    await this.exited;
  }

  /** kill -9: nothing is flushed beyond what `appendfsync always` already wrote. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child!.kill('SIGKILL');
    await this.exited;
  }

  /**
   * SIGSTOP: the process stops answering but its connections stay open and new ones are still
   * accepted by the kernel, as with a Redis that hangs or a network that drops packets silently.
   */
  freeze(): void {
    if (this.running) this.child!.kill('SIGSTOP');
  }

  /** SIGCONT: a frozen server answers again, every command it was sent meanwhile in order. */
  thaw(): void {
    if (this.running) this.child!.kill('SIGCONT');
  }

  /** Stops the server and deletes its data directory. */
  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
