import { STATUS_CODES, createServer, maxHeaderSize, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { ProblemCode } from '@po/contracts';
import { newTraceId } from '@po/domain';
import { toProblem } from './problem.js';

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting connections and waits for in-flight requests (idle keep-alives are closed). */
  close(): Promise<void>;
}

export async function listen(app: Pick<Koa, 'callback'>, host: string, port: number): Promise<RunningServer> {
  // A request without Host or with an Expect other than 100-continue would get a bare 400/417 from
  // Node; neither matters to this API, so such requests are served like any other (RFC 9110 lets a
  // server ignore an unknown expectation).
  const handle = app.callback();
  const server = createServer({ requireHostHeader: false }, handle);
  server.on('checkExpectation', handle);
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  return startListening(server, host, port);
}

/** Binds `server` to host:port; `close()` stops accepting and waits for in-flight requests. */
export async function startListening(server: Server, host: string, port: number): Promise<RunningServer> {
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

type ClientError = Error & { code?: string; reason?: string; rawPacket?: Buffer };

/** What Node would answer with a bare status line, as the problem of that status. */
function problemCodeOf(err: ClientError): ProblemCode {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'request_header_too_large';
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 'payload_too_large';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 'request_timeout';
    default:
      return 'validation_failed';
  }
}

const READABLE_TARGET = /^[A-Z]+ (\/[^ ?]{0,2047})[ ?]/;

/**
 * The path of a request Node could not parse, percent-encoded as a URI would carry it, when its
 * request line is at hand and not absurdly long; otherwise "" (no path could be read).
 */
function instanceOf(err: ClientError): string {
  const match = READABLE_TARGET.exec(err.rawPacket?.subarray(0, 2100).toString('latin1') ?? '');
  if (!match) return '';
  return match[1]!.replace(/[^\x21-\x7e]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/**
 * Requests Node rejects before they reach the app (a request line and headers past maxHeaderSize, a
 * byte a URL cannot hold, a malformed header, a request too slow to arrive) get a problem+json
 * body like every other 4xx (addendum §3) instead of Node's bare status line. As Node does, it is
 * written only while no response has started on the connection, which is then closed.
 */
function answerClientError(err: ClientError, socket: Duplex): void {
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const code = problemCodeOf(err);
  const detail =
    code === 'request_header_too_large'
      ? `The request line and headers together exceed the ${maxHeaderSize} bytes the server reads.`
      : code === 'request_timeout'
        ? 'The request did not arrive in time.'
        : `The request is not valid HTTP/1.1: ${err.reason ?? err.message}.`;
  const problem = toProblem(code, detail, { path: instanceOf(err), traceId: newTraceId() });
  const body = JSON.stringify(problem);
  const response =
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}\r\n` +
    'Content-Type: application/problem+json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`;
  socket.end(response, () => socket.destroy());
}
