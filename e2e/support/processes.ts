import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from '../../deploy/local/stack.mjs';

export type ServiceName = 'api-gateway' | 'worker-gateway' | 'pipeline-service' | 'scheduler-service' | 'result-consumer';

/** Ports handed out in this test process: the OS may offer one again before its process binds it. */
const handedOut = new Set<number>();

/** A port the OS says is free now, never one this test process handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await osFreePort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function osFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * One real process (a service or a worker) with its output kept line by line, that a test can
 * stop gracefully, kill -9 and start again on the same port.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<number | null> = Promise.resolve(null);
  readonly lines: string[] = [];

  constructor(
    readonly name: string,
    /** A script run by this Node, or a whole command line (another SDK's worker). */
    private readonly script: string | readonly string[],
    private readonly env: Record<string, string | undefined>,
    readonly port?: number,
    readonly metricsPort?: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Where GET /metrics is served: a port of its own, never the API port. */
  get metricsUrl(): string {
    return `http://127.0.0.1:${this.metricsPort}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): this {
    const env = {
      ...this.env,
      ...(this.port ? { PORT: String(this.port) } : {}),
      ...(this.metricsPort !== undefined ? { METRICS_PORT: String(this.metricsPort) } : {}),
    };
    const [command, ...args] = typeof this.script === 'string' ? [process.execPath, this.script] : this.script;
    const child = spawn(command!, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.lines.push(line));
    }
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    this.child = child;
    return this;
  }

  /**
   * Until GET /readyz answers 200. A process that exits fails at once; one that is still starting
   * gets until the deadline: 100 s, under the e2e hooks' 120 s, since five services importing their
   * code at once on a loaded two-core box took over 30 s (the deadline before, which failed the
   * whole file while every service was still coming up).
   */
  async waitReady(timeoutMs = 100_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (!this.running) throw new Error(`${this.name} exited before it was ready:\n${this.lines.slice(-20).join('\n')}`);
      try {
        if ((await fetch(`${this.url}/readyz`)).status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${this.name} not ready after ${timeoutMs} ms:\n${this.lines.slice(-20).join('\n')}`);
  }

  /** SIGTERM and wait for the exit code (graceful shutdown). */
  async stop(): Promise<number | null> {
    if (!this.running) return null;
    this.child!.kill('SIGTERM');
    return this.exited;
  }

  /** kill -9: no shutdown hooks run. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child!.kill('SIGKILL');
    await this.exited;
  }
}

/** A service on `port`, with its metrics on `metricsPort` (each service's default would collide between replicas). */
export function serviceProcess(
  name: ServiceName,
  env: Record<string, string | undefined>,
  port: number,
  label: string = name,
  metricsPort = 0,
): ManagedProcess {
  return new ManagedProcess(label, `services/${name}/dist/main.js`, env, port, metricsPort);
}
