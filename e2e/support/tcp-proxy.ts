import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './processes.js';

interface Forwarded {
  client: Socket;
  upstream: Socket;
  target: number;
}

/**
 * A TCP forwarder on 127.0.0.1 standing for a Kubernetes Service in front of a PostgreSQL primary
 * (CloudNativePG's `-rw`): each new connection goes to the port the proxy points at now.
 * `retarget` changes where new connections go; connections already forwarded keep their target,
 * as kube-proxy's conntrack entries do when a Service's endpoints change. When either side of a
 * forwarded connection closes or fails, the other side is closed too (a refused target closes the
 * client at once).
 */
export class TcpProxy {
  private readonly forwarded = new Set<Forwarded>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private current: number,
  ) {
    server.on('connection', (client) => this.forward(client));
  }

  static async start(target: number): Promise<TcpProxy> {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return new TcpProxy(server, port, target);
  }

  /** The port new connections are forwarded to. */
  get target(): number {
    return this.current;
  }

  /** New connections go to `port` from now on; open ones stay where they are. */
  retarget(port: number): void {
    this.current = port;
  }

  /** Forwarded connections open now, to `target` or to any. */
  openConnections(target?: number): number {
    return [...this.forwarded].filter((f) => target === undefined || f.target === target).length;
  }

  /** Stops listening and closes every forwarded connection. */
  async close(): Promise<void> {
    for (const f of this.forwarded) {
      f.client.destroy();
      f.upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(client: Socket): void {
    const upstream = connect({ host: '127.0.0.1', port: this.current });
    const f: Forwarded = { client, upstream, target: this.current };
    this.forwarded.add(f);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const end = () => {
      this.forwarded.delete(f);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
    // Bytes the client sends before the target accepted are buffered by the upstream socket.
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
