// Sends fuzz requests: node:http with keep-alive for ordinary ones (any bytes in the body, any
// Content-Type, chunked or declared lengths), a raw socket for what node:http refuses to write
// (raw bytes in the request line, bad header bytes, broken framing). Every request has a timeout;
// a request that runs into it is a hang.
import http from 'node:http';
import net from 'node:net';

/** Response bytes kept per request (the leak oracle scans all of them before this cut). */
const KEEP_BYTES = 8 << 20;

export function createClient({ concurrency }) {
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: concurrency * 2,
    maxFreeSockets: concurrency,
  });
  return {
    /** -> { status, headers, body: Buffer, ms } | { timeout: true, ms } | { error, ms } */
    send(base, req, timeoutMs) {
      return req.raw ? sendRaw(base, req, timeoutMs) : sendHttp(base, req, timeoutMs, agent);
    },
    close() {
      agent.destroy();
    },
  };
}

/**
 * Calls `fire(lagMs)` after `ms`, unless cancelled. A timer that fires more than 1 s late means this
 * process was too busy to read the answers (a big body being built or sent, a loaded machine): it
 * is armed once more before the request counts as a hang, and the lag is reported with it.
 */
function deadline(ms, fire) {
  let t;
  let graced = false;
  const arm = (wait) => {
    const armedAt = performance.now();
    t = setTimeout(() => {
      const late = performance.now() - armedAt - wait;
      if (late > 1000 && !graced) {
        graced = true;
        arm(Math.min(10_000, late + 2000));
      } else fire(Math.round(late));
    }, wait);
  };
  arm(ms);
  return { cancel: () => clearTimeout(t) };
}

function sendHttp(base, req, timeoutMs, agent) {
  const url = new URL(base);
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    let timer;
    const finish = (result) => {
      if (done) return;
      done = true;
      timer?.cancel();
      resolve({ ...result, ms: Math.round(performance.now() - started) });
    };
    const headers = { ...req.headers };
    if (req.body !== undefined && !req.chunked) headers['content-length'] = String(req.body.length);
    if (req.chunked) headers['transfer-encoding'] = 'chunked';
    let request;
    try {
      request = http.request(
        { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent },
        (res) => {
          const chunks = [];
          let size = 0;
          res.on('data', (c) => {
            if (size < KEEP_BYTES) chunks.push(c);
            size += c.length;
          });
          res.on('end', () =>
            finish({
              status: res.statusCode,
              headers: res.headers,
              body: Buffer.concat(chunks),
              bodyBytes: size,
            }),
          );
          res.on('error', (err) =>
            finish({
              status: res.statusCode,
              headers: res.headers,
              body: Buffer.concat(chunks),
              error: err.code ?? err.message,
            }),
          );
        },
      );
    } catch (err) {
      finish({ error: `client refused the request: ${err.code ?? err.message}` });
      return;
    }
    timer = deadline(timeoutMs, (lagMs) => {
      finish({ timeout: true, clientLagMs: lagMs });
      request.destroy(new Error('fuzz timeout'));
    });
    request.on('error', (err) => finish({ error: err.code ?? err.message }));
    if (req.body === undefined) request.end();
    else if (req.chunked) {
      // Several chunks, so the server sees a stream and not one piece.
      const step = Math.max(1, Math.ceil(req.body.length / 4));
      for (let i = 0; i < req.body.length; i += step) request.write(req.body.subarray(i, i + step));
      request.end();
    } else request.end(req.body);
  });
}

/** Builds a raw HTTP/1.1 request: request line and headers as given (Buffers allowed). */
export function rawRequest({ method = 'GET', target, version = 'HTTP/1.1', headers = [], body }) {
  const head = [
    Buffer.from(`${method} `),
    Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'),
    Buffer.from(` ${version}\r\n`),
  ];
  for (const [name, value] of headers) {
    head.push(
      Buffer.isBuffer(name) ? name : Buffer.from(name, 'latin1'),
      Buffer.from(': '),
      Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'latin1'),
      Buffer.from('\r\n'),
    );
  }
  head.push(Buffer.from('\r\n'));
  if (body) head.push(Buffer.isBuffer(body) ? body : Buffer.from(body));
  return Buffer.concat(head);
}

function sendRaw(base, req, timeoutMs) {
  const url = new URL(base);
  const started = performance.now();
  return new Promise((resolve) => {
    let done = false;
    let buf = Buffer.alloc(0);
    const socket = net.connect(Number(url.port), url.hostname);
    const finish = (result) => {
      if (done) return;
      done = true;
      timer?.cancel();
      socket.destroy();
      resolve({ ...result, ms: Math.round(performance.now() - started) });
    };
    const timer = deadline(timeoutMs, (lagMs) => {
      const parsed = parseResponse(buf, true);
      finish(parsed ?? { timeout: true, clientLagMs: lagMs });
    });
    socket.on('connect', () => {
      socket.write(req.raw);
      if (req.halfClose) socket.end();
    });
    socket.on('data', (chunk) => {
      if (buf.length < KEEP_BYTES) buf = Buffer.concat([buf, chunk]);
      const parsed = parseResponse(buf, false);
      if (parsed) finish(parsed);
    });
    const closed = () =>
      finish(
        parseResponse(buf, true) ?? {
          error: buf.length ? 'unparsable response' : 'closed without a response',
        },
      );
    socket.on('end', closed);
    socket.on('close', closed);
    socket.on('error', (err) =>
      finish(parseResponse(buf, true) ?? { error: err.code ?? err.message }),
    );
  });
}

/** The first response in `buf`, or null while it is incomplete (`eof`: the peer closed). */
export function parseResponse(buf, eof) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0]);
  if (!m) return eof ? { error: `bad status line: ${lines[0].slice(0, 80)}` } : null;
  const headers = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const status = Number(m[1]);
  const rest = buf.subarray(end + 4);
  // An interim answer (100 Continue) comes before the real one.
  if (status >= 100 && status < 200 && status !== 101)
    return parseResponse(rest, eof) ?? (eof ? { status, headers, body: Buffer.alloc(0) } : null);
  if (status === 204 || status === 304 || status === 101)
    return { status, headers, body: Buffer.alloc(0) };
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (rest.length >= length) return { status, headers, body: rest.subarray(0, length) };
    return eof ? { status, headers, body: rest, error: 'body cut short' } : null;
  }
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const chunks = [];
    let at = 0;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n', at);
      if (lineEnd < 0) break;
      const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
      if (Number.isNaN(size)) break;
      if (size === 0) return { status, headers, body: Buffer.concat(chunks) };
      if (rest.length < lineEnd + 2 + size + 2) break;
      chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    return eof
      ? { status, headers, body: Buffer.concat(chunks), error: 'chunked body cut short' }
      : null;
  }
  return eof ? { status, headers, body: rest } : null;
}
