import { Agent, createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the proxy passed on: enough for a scenario to count what the worker sent. */
export interface Seen {
  method: string;
  path: string;
  body: string;
  status: number | undefined;
  /** The gateway's answer (also when the worker never got it). */
  answer: string | undefined;
  dropped: boolean;
}

/**
 * An HTTP proxy between a worker and the worker-gateway that can lose a response on the way back:
 * the request reaches the gateway and takes effect, the worker sees its connection reset. That is
 * the "unknown outcome" the protocol asks workers to retry with the same body (spec, worker
 * protocol rule 3).
 */
export class FaultProxy {
  private server: Server | undefined;
  private readonly agent = new Agent({ keepAlive: true });
  private readonly dropOnce = new Set<string>();
  readonly seen: Seen[] = [];

  constructor(private readonly upstream: string) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** The response to the next result whose body contains `marker` is lost after the gateway answered. */
  dropNextResultResponse(marker: string): void {
    this.dropOnce.add(marker);
  }

  /** The result calls that carried `marker`, in order. */
  results(marker: string): Seen[] {
    return this.seen.filter((s) => s.path.endsWith('/result') && s.body.includes(marker));
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void readBody(req).then((body) => {
        const seen: Seen = { method: req.method ?? 'GET', path: req.url ?? '/', body, status: undefined, answer: undefined, dropped: false };
        this.seen.push(seen);
        const marker = seen.path.endsWith('/result') ? [...this.dropOnce].find((m) => body.includes(m)) : undefined;
        if (marker !== undefined) this.dropOnce.delete(marker);
        const target = new URL(seen.path, this.upstream);
        const upstream = request(target, { method: seen.method, headers: req.headers, agent: this.agent }, (answer) => {
          void readBody(answer).then((text) => {
            seen.status = answer.statusCode;
            seen.answer = text;
            if (marker !== undefined) {
              seen.dropped = true;
              req.socket.destroy();
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(text);
          });
        });
        upstream.on('error', () => req.socket.destroy());
        // A worker that gives up (an aborted long poll) must not leave its pull waiting upstream.
        res.on('close', () => {
          if (!res.writableFinished) upstream.destroy();
        });
        upstream.end(body);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.agent.destroy();
  }
}

function readBody(stream: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
  });
}
