// Bad path and query parameters, and wire-level requests (sent on a raw socket): over-long
// request lines and headers, raw bytes in the path, broken framing, odd methods and versions.
import fc from 'fast-check';
import { rawRequest } from './client.mjs';

/** Percent-encodes a string as UTF-8, lone surrogates as their (invalid) 3-byte forms. */
export function encodeSegment(s) {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    if (/[A-Za-z0-9\-_.~]/.test(ch)) out += ch;
    else if (cp >= 0xd800 && cp <= 0xdfff)
      out += [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    else
      out += [...Buffer.from(ch, 'utf8')]
        .map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`)
        .join('');
  }
  return out;
}

// Any code point, lone surrogates included (fast-check's 'binary' unit costs seconds to build).
const anyCodePoint = fc.integer({ min: 0, max: 0x10ffff }).map((cp) => String.fromCodePoint(cp));
const binaryShort = fc.string({ minLength: 1, maxLength: 12, unit: anyCodePoint });
const binaryName = fc.string({ minLength: 1, maxLength: 30, unit: anyCodePoint });

// prettier-ignore
const BAD_IDS = ['0', '-1', '01', '1.5', '1e3', '%2B1', '%201', '1%20', '0x1F', 'abc', '1a', 'NaN', 'Infinity', 'null', 'undefined', 'true', '%5B%5D', '9007199254740991', '9007199254740992', '18446744073709551616', '99999999999999999999999999', '1'.repeat(400), encodeSegment('２'), encodeSegment('١'), encodeSegment('𝟏'), '%2531', '%00', '%ff', '%ED%A0%80', '%C0%AF', '%', '%%', '%zz', '..', '.', '%2e%2e', '1%2F2', '1;x', '1,2', '*', '$', "'", '1%0A', '-0', '00000000000000000001', '4294967296', '2147483648'];
// prettier-ignore
const BAD_NAMES = ['%20', 'a'.repeat(201), encodeSegment('😀'.repeat(200)), encodeSegment('😀'.repeat(201)), 'x'.repeat(5000), '%00', '%01', '%0A', '%0D%0A', '%7F', '%C2%85', '%E2%80%A8', '%ED%A0%80', '%ED%B0%80', '%E0%A4%A', '%', '%%', '%zz', '%C0%AF', '%FF%FE', '..', '%2e%2e', '%2F', 'a%2Fb', '%5C', 'A'.repeat(200), ':name', '*', '%7Bname%7D', encodeSegment("'; DROP TABLE schedules;--"), encodeSegment('$(id)'), '%25', '%2525', encodeSegment('İstanbul'), encodeSegment('ǅ'), encodeSegment('\ufeffbom')];
// prettier-ignore
const BAD_WORKER_IDS = ['x'.repeat(65), 'x'.repeat(64), '%00', '%ED%A0%80', '..', '%2F', encodeSegment('wörker'), '%', '%zz', '-1', encodeSegment('\u0001')];

// prettier-ignore
const BAD_QUERIES = {
  limit: ['0', '201', '-1', '1.5', 'abc', '', '1e2', '01', '%31', '200', '1', encodeSegment('١'), '%00', '9'.repeat(400), '%ED%A0%80'],
  cursor: ['', 'x', 'a'.repeat(10_000), '%ED%A0%80', '%00', Buffer.from('{"id":-1}').toString('base64url'), Buffer.from('{"id":"1\' OR 1=1"}').toString('base64url'), Buffer.from('{"after":9007199254740993}').toString('base64url'), '%FF', Buffer.from('null').toString('base64url'), 'eyJ', '%', '%zz', Buffer.from('x'.repeat(300)).toString('base64')],
  status: ['active', 'ACTIVE', '', 'Deleted', '%00', 'Active%00', 'Active,Paused', encodeSegment('Actİve')],
};

/** Path family: one bad path parameter, a bad query, or a bent path shape. */
export const pathFamily = {
  badId(d, draft, ctx) {
    const name = ctx.op.pathParams.find(
      (p) => p.name === 'pipelineId' || p.name === 'stageId',
    )?.name;
    if (!name) return null;
    // Also the id already there, percent-encoded: it must reach the same resource (and for
    // another application's id, still be refused).
    const r = d.float();
    if (r < 0.1) draft.params[name] = [...draft.params[name]].map((ch) => `%3${ch}`).join('');
    else draft.params[name] = r < 0.85 ? d.pick(BAD_IDS) : encodeSegment(d.sample(binaryShort));
    return `bad-${name}:${draft.params[name].slice(0, 40)}`;
  },
  badName(d, draft, ctx) {
    if (!ctx.op.pathParams.some((p) => p.name === 'name')) return null;
    draft.params.name = d.chance(0.8) ? d.pick(BAD_NAMES) : encodeSegment(d.sample(binaryName));
    return `bad-name:${draft.params.name.slice(0, 40)}`;
  },
  badWorkerId(d, draft, ctx) {
    if (!ctx.op.pathParams.some((p) => p.name === 'workerId')) return null;
    draft.params.workerId = d.pick(BAD_WORKER_IDS);
    return `bad-workerId:${draft.params.workerId.slice(0, 40)}`;
  },
  badQuery(d, draft, ctx) {
    const params = ctx.op.queryParams.map((p) => p.name);
    const name = params.length ? d.pick(params) : d.pick(['limit', 'cursor']);
    const pairs = [`${name}=${d.pick(BAD_QUERIES[name] ?? BAD_QUERIES.cursor)}`];
    if (d.chance(0.2)) pairs.push(`${name}=${d.pick(['1', '2', 'x'])}`);
    if (d.chance(0.15))
      pairs.push(
        d.pick([
          'limit[]=1',
          'limit[a]=1',
          '__proto__[x]=1',
          'constructor[prototype][x]=1',
          'foo=bar',
          '&&&',
          '=',
          'a'.repeat(300),
        ]),
      );
    draft.query = pairs.join('&');
    return `bad-query:${name}`;
  },
  pathShape(d, draft) {
    const shape = d.pick([
      'trailing-slash',
      'double-slash',
      'extra-segment',
      'upper-case',
      'encoded-slash',
      'dot-segments',
      'empty-query',
      'long-query',
      'semicolon',
    ]);
    draft.shape = shape;
    return `path-shape:${shape}`;
  },
};

/** Applies draft.shape to a built path. */
export function shapePath(path, shape) {
  const [bare, query] = path.split('?');
  const q = query === undefined ? '' : `?${query}`;
  switch (shape) {
    case 'trailing-slash':
      return `${bare}/${q}`;
    case 'double-slash':
      return `${bare.replace(/\/([^/]*)$/, '//$1')}${q}`;
    case 'extra-segment':
      return `${bare}/extra${q}`;
    case 'upper-case':
      return `${bare.toUpperCase()}${q}`;
    case 'encoded-slash':
      return `${bare.replace(/\/([^/]*)$/, '%2F$1')}${q}`;
    case 'dot-segments':
      return `/x/..${bare}${q}`;
    case 'empty-query':
      return `${bare}?`;
    case 'long-query':
      return `${bare}?q=${'a'.repeat(8000)}`;
    case 'semicolon':
      return `${bare};jsessionid=1${q}`;
    default:
      return path;
  }
}

/**
 * Wire family: the whole request as bytes. `base` is { path, headers: [[name, value]], body }
 * for a normal request of the chosen operation; each variant bends one thing.
 */
export const wireFamily = {
  longRequestLine(d, base) {
    const n = d.pick([8_000, 17_000, 70_000]);
    return {
      raw: rawRequest({
        method: base.method,
        target: `${base.path}${base.path.includes('?') ? '&' : '?'}q=${'a'.repeat(n)}`,
        headers: base.headers,
        body: base.body,
      }),
      variant: `request-line-${n}`,
    };
  },
  longHeader(d, base) {
    const n = d.pick([10_000, 17_000, 70_000]);
    const which = d.pick(['x-fuzz', 'x-api-key', 'x-worker-session', 'cookie', 'traceparent']);
    const headers = [...base.headers.filter(([h]) => h !== which), [which, 'a'.repeat(n)]];
    return {
      raw: rawRequest({ method: base.method, target: base.path, headers, body: base.body }),
      variant: `long-header:${which}-${n}`,
    };
  },
  manyHeaders(d, base) {
    const n = d.pick([150, 2500]);
    const headers = [...base.headers, ...Array.from({ length: n }, (_, i) => [`x-h${i}`, 'v'])];
    return {
      raw: rawRequest({ method: base.method, target: base.path, headers, body: base.body }),
      variant: `many-headers-${n}`,
    };
  },
  rawBytesInPath(d, base) {
    const bytes = d.pick([
      [0xff],
      [0xc3, 0xa9],
      [0xe9],
      [0x7f],
      [0x80],
      [0xed, 0xa0, 0x80],
      [0x09],
      [0x20],
      [0x00],
    ]);
    const at = base.path.lastIndexOf('/') + 1;
    const target = Buffer.concat([
      Buffer.from(base.path.slice(0, at)),
      Buffer.from(bytes),
      Buffer.from(base.path.slice(at)),
    ]);
    return {
      raw: rawRequest({ method: base.method, target, headers: base.headers, body: base.body }),
      variant: `raw-bytes-in-path:${bytes.map((b) => b.toString(16)).join(' ')}`,
    };
  },
  badHeaderBytes(d, base) {
    const bad = d.pick([
      ['x-api-key', Buffer.from('pos_é\u00ff', 'latin1')],
      ['x-api-key', Buffer.from('pos_ключ', 'utf8')],
      ['x-worker-session', Buffer.from([0x70, 0x00, 0x71])],
      ['content-type', Buffer.from('application/json; charset=ü', 'utf8')],
      [Buffer.from('x bad name'), 'v'],
      [Buffer.from('x-ü', 'utf8'), 'v'],
      ['x-fold', 'a\r\n folded'],
      ['traceparent', Buffer.from('00-\u00ff\u00ff-00-01', 'latin1')],
    ]);
    const headers = [...base.headers.filter(([h]) => h !== bad[0]), bad];
    return {
      raw: rawRequest({ method: base.method, target: base.path, headers, body: base.body }),
      variant: `bad-header-bytes:${String(bad[0])}`,
    };
  },
  noHost(d, base) {
    return {
      raw: rawRequest({
        method: base.method,
        target: base.path,
        headers: base.headers.filter(([h]) => h !== 'host'),
        body: base.body,
      }),
      variant: 'no-host-header',
    };
  },
  conflictingLength(d, base) {
    const body = base.body ?? Buffer.from('{}');
    const headers = [
      ...base.headers.filter(([h]) => h !== 'content-length'),
      ['content-length', String(body.length)],
      ['content-length', String(body.length + 5)],
    ];
    return {
      raw: rawRequest({ method: 'POST', target: base.path, headers, body }),
      variant: 'conflicting-content-length',
    };
  },
  lengthAndChunked(d, base) {
    const body = base.body ?? Buffer.from('{}');
    const headers = [
      ...base.headers.filter(([h]) => h !== 'content-length'),
      ['content-length', String(body.length)],
      ['transfer-encoding', 'chunked'],
    ];
    return {
      raw: rawRequest({
        method: 'POST',
        target: base.path,
        headers,
        body: `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      }),
      variant: 'content-length-and-chunked',
    };
  },
  badChunked(d, base) {
    const headers = [
      ...base.headers.filter(([h]) => h !== 'content-length'),
      ['transfer-encoding', d.pick(['chunked', 'chunked, gzip', 'gzip', 'identity'])],
    ];
    // The client ends its side: a body cut short is then complete, and must be answered (or closed).
    return {
      raw: rawRequest({
        method: 'POST',
        target: base.path,
        headers,
        body: d.pick([
          'zz\r\n{}\r\n0\r\n\r\n',
          '2\r\n{}\r\n',
          'ffffffffffffffff\r\n{}\r\n0\r\n\r\n',
          '-1\r\n\r\n',
        ]),
      }),
      variant: 'bad-chunked',
      mayClose: true,
      halfClose: true,
    };
  },
  truncatedBody(d, base) {
    const body = base.body ?? Buffer.from('{"name":"x"}');
    const headers = [
      ...base.headers.filter(([h]) => h !== 'content-length'),
      ['content-length', String(body.length + 50)],
    ];
    return {
      raw: rawRequest({ method: 'POST', target: base.path, headers, body }),
      variant: 'body-shorter-than-content-length',
      halfClose: true,
      mayClose: true,
    };
  },
  http10(d, base) {
    return {
      raw: rawRequest({
        method: base.method,
        target: base.path,
        version: 'HTTP/1.0',
        headers: base.headers.filter(([h]) => h !== 'host'),
        body: base.body,
      }),
      variant: 'http-1.0',
    };
  },
  oddMethod(d, base) {
    const method = d.pick([
      'FOO',
      'PROPFIND',
      'PATCH',
      'DELETE',
      'OPTIONS',
      'HEAD',
      'TRACE',
      'PUT',
      'CONNECT',
    ]);
    return {
      raw: rawRequest({
        method,
        target: method === 'CONNECT' ? '127.0.0.1:1' : base.path,
        headers: base.headers,
        body: base.body,
      }),
      variant: `method-${method}`,
      mayClose: method === 'CONNECT',
      head: method === 'HEAD',
    };
  },
  oddTarget(d, base) {
    const target = d.pick([
      `http://evil.example${base.path}`,
      '*',
      `//${base.path}`,
      `${base.path}#frag`,
      `/%2e%2e/${base.path}`,
      'pipelines',
    ]);
    return {
      raw: rawRequest({
        method: target === '*' ? 'OPTIONS' : base.method,
        target,
        headers: base.headers,
        body: base.body,
      }),
      variant: `request-target:${target.slice(0, 24)}`,
    };
  },
  badVersion(d, base) {
    const version = d.pick(['HTTP/9.9', 'HTTP/2.0', 'HTTP/1.1x', 'HTTP/0.9', 'HTTPS/1.1', '']);
    return {
      raw: rawRequest({
        method: base.method,
        target: base.path,
        version,
        headers: base.headers,
        body: base.body,
      }),
      variant: `version:${version || '(none)'}`,
      mayClose: version === 'HTTP/0.9',
      halfClose: version === 'HTTP/0.9',
    };
  },
  garbage(d) {
    const raw = d.pick([
      Buffer.from('GARBAGE\r\n\r\n'),
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00]),
      Buffer.from('GET\r\n\r\n'),
      Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    ]);
    return {
      raw,
      variant: `garbage:${raw.subarray(0, 8).toString('hex')}`,
      mayClose: true,
      halfClose: true,
    };
  },
  expectations(d, base) {
    const expect = d.pick(['100-continue', 'fuzz', '']);
    return {
      raw: rawRequest({
        method: 'POST',
        target: base.path,
        headers: [...base.headers, ['expect', expect]],
        body: base.body ?? Buffer.from('{}'),
      }),
      variant: `expect:${expect || '(empty)'}`,
    };
  },
  upgrade(d, base) {
    return {
      raw: rawRequest({
        method: 'GET',
        target: base.path,
        headers: [...base.headers, ['connection', 'Upgrade'], ['upgrade', 'websocket']],
      }),
      variant: 'upgrade-websocket',
      mayClose: true,
    };
  },
};
