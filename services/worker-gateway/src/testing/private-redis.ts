import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A `redis-server` of one test file on 127.0.0.1 and a free port, without persistence, that the
 * test may freeze (SIGSTOP: it stops answering, its connections stay open) and thaw: what the
 * shared test Redis cannot be made to do without disturbing every other file.
 */
export class PrivateRedis {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
  ) {}

  static async start(): Promise<PrivateRedis> {
    const port = await freePort();
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const server = new PrivateRedis(port, child, exited);
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const probe = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') return server;
      } catch {
        // not accepting connections yet
      } finally {
        probe.disconnect();
      }
      await sleep(50);
    }
    await server.stop();
    throw new Error(`redis-server on port ${port} not ready`);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  freeze(): void {
    this.child.kill('SIGSTOP');
  }

  thaw(): void {
    this.child.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}
