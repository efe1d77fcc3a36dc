import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, problemDetailsSchema } from '@po/contracts';
import { createLogger } from '@po/telemetry';
import { createHttpApp } from './app.js';
import { sendJson } from './respond.js';
import { createRouter } from './router.js';
import { listen, type RunningServer } from './server.js';

const logger = createLogger({
  service: 'test',
  destination: new Writable({ write: (_c, _e, done) => done() }),
});
let server: RunningServer;

beforeAll(async () => {
  const router = createRouter();
  router.get('/ok', (ctx) => sendJson(ctx, 200, { ok: true }));
  server = await listen(createHttpApp({ logger, routers: [router] }), '127.0.0.1', 0);
});
afterAll(() => server.close());

/** Sends raw bytes on a fresh TCP connection and reads until the server closes it. */
function exchange(
  raw: Buffer | string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(server.port, '127.0.0.1', () => socket.write(raw));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [
          line.slice(0, line.indexOf(':')).toLowerCase(),
          line.slice(line.indexOf(':') + 1).trim(),
        ]),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

const problemShape = compile(problemDetailsSchema, { normalise: false });

function expectProblem(
  reply: { status: number; headers: Record<string, string>; body: string },
  status: number,
  code: string,
): Record<string, unknown> {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('application/problem+json');
  expect(Number(reply.headers['content-length'])).toBe(Buffer.byteLength(reply.body));
  const body = JSON.parse(reply.body) as Record<string, unknown>;
  const checked = problemShape(body);
  expect(checked.ok ? [] : checked.errors).toEqual([]);
  expect(body).toMatchObject({
    status,
    code,
    type: `urn:problem-type:pipeline-orchestration:${code}`,
  });
  return body;
}

describe('requests the HTTP parser refuses get problem+json too (addendum §3)', () => {
  it('a request line over the header limit is a 431 problem', async () => {
    const reply = await exchange(
      `GET /pipelines/${'1'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    const body = expectProblem(reply, 431, 'request_header_too_large');
    expect(body.title).toBe('Request header fields too large');
  });

  it('a raw non-ASCII byte in the path is a 400 validation_failed problem on the path', async () => {
    const raw = Buffer.concat([
      Buffer.from('GET /pipelines/'),
      Buffer.from([0xc3, 0xa9]),
      Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
    ]);
    const body = expectProblem(await exchange(raw), 400, 'validation_failed');
    expect(body.instance).toBe('/pipelines/%C3%A9');
    expect(body.errors).toEqual([
      { field: '', message: expect.stringContaining('not valid HTTP/1.1') },
    ]);
  });

  it('a malformed header and a garbage request line are 400 problems; well-formed requests are still served', async () => {
    expectProblem(
      await exchange('GET /ok HTTP/1.1\r\nBad Header\r\n\r\n'),
      400,
      'validation_failed',
    );
    expectProblem(await exchange('GARBAGE\r\n\r\n'), 400, 'validation_failed');
    expect((await fetch(`http://127.0.0.1:${server.port}/ok`)).status).toBe(200);
  });

  it('a request without Host, or with an unknown Expect, is served, not answered with a bare 400/417', async () => {
    expect((await exchange('GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n')).status).toBe(200);
    expect((await exchange('GET /ok HTTP/1.1\r\nHost: x\r\nExpect: fuzz\r\nConnection: close\r\n\r\n')).status).toBe(200);
    expectProblem(await exchange('GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n'), 404, 'not_found');
  });
});
