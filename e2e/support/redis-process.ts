import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';

/** One redis-server (or redis-sentinel) of a test's own, on its port and in its directory; restartable after a kill. */
export class RedisProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  readonly lines: string[] = [];

  constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(command: string, args: string[]): void {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.lines.push(line));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    this.child = child;
  }

  async kill(): Promise<void> {
    if (!this.running) return;
    this.child!.kill('SIGKILL');
    await this.exited;
  }
}

/** Asks the node on `port` once, on a connection of its own; undefined when it does not answer. */
export async function probeRedis<T>(port: number, ask: (r: Redis) => Promise<T>): Promise<T | undefined> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await ask(r);
  } catch {
    return undefined;
  } finally {
    r.disconnect();
  }
}
