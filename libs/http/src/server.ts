import { createServer, type Server } from 'node:http';
import type Koa from 'koa';

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting connections and waits for in-flight requests (idle keep-alives are closed). */
  close(): Promise<void>;
}

export async function listen(app: Pick<Koa, 'callback'>, host: string, port: number): Promise<RunningServer> {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    server,
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
