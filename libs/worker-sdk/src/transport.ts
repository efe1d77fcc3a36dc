// The SDK's default transport: node:http(s) with keep-alive agents. Every stage costs a worker four
// requests (pull, lease, result, ack); through the global fetch each one builds WHATWG streams,
// Request and Response objects and composite abort signals, which made the worker the largest CPU
// user per stage in the engine benchmark (docs/performance.md).
import http from 'node:http';
import https from 'node:https';

/** What the client sends. Global `fetch` accepts it, so it can stand in for this transport. */
export interface TransportRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** What the client reads of an answer (a subset of fetch's Response). */
export interface TransportResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** A fetch-like function: the global `fetch` is one. */
export type FetchLike = (url: string, init: TransportRequest) => Promise<TransportResponse>;

const agents = {
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true }),
};

/** One request over a kept-alive connection; the body is read whole (protocol bodies are small). */
export const httpFetch: FetchLike = (url, init) =>
  new Promise<TransportResponse>((resolve, reject) => {
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    const headers = init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
    const req = (secure ? https : http).request(
      target,
      { method: init.method, headers, agent: secure ? agents.https : agents.http, signal: init.signal },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: {
              get(name) {
                const value = res.headers[name.toLowerCase()];
                return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
              },
            },
            text: () => Promise.resolve(body),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
