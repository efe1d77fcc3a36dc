// Body mutations: malformed JSON and framing, wrong types, wrong encodings. Each variant edits a
// request draft ({ value, body, headers, chunked, ... }) and returns its name, or null when the
// body has nothing it can aim at (the caller then tries another variant).
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import {
  Bytes,
  Raw,
  deleteAt,
  getAt,
  isFreeForm,
  locations,
  setAt,
  setMember,
  toJsonBuffer,
  typesOf,
  label,
} from './schema-values.mjs';

export const text = (draft) => toJsonBuffer(draft.value ?? {}).toString('utf8');
const placesOf = (draft, ctx) => locations(draft.value, ctx.op.bodySchema ?? {}, ctx.resolve);
const stringPlaces = (draft, ctx) =>
  placesOf(draft, ctx).filter((l) =>
    l.schema
      ? typesOf(l.schema).includes('string')
      : typeof getAt(draft.value, l.path) === 'string',
  );
const objectRoot = (draft) =>
  draft.value !== null && typeof draft.value === 'object' && !Array.isArray(draft.value);

// ---------------------------------------------------------------- malformed JSON and framing
// prettier-ignore
const NOT_JSON = ["{'name':'x'}", '{name:1}', 'undefined', 'NaN', '[1,2,', '{"a":}', '{"a" 1}', '"unterminated', '{"a":1,}', '// c\n{}', '{}{}', 'true false', '{"a":"\\x41"}', '{"a":"\\u00"}', '{"a":"\\uZZZZ"}', '\u0000', '{"a":01}', '{"a":+1}', '{"a":.5}', '{"a":0x10}', '{"a":Infinity}', '<xml/>', '\\', '{"a":"b"', ']'];
// prettier-ignore
const NON_OBJECT = ['[]', '[{}]', '"str"', '123', 'null', 'true', '-0', '1e999', '[[]]', '""', '[null]', '0'];
// prettier-ignore
const CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=fz', 'application/xml', 'application/octet-stream', 'application/json; charset=iso-8859-1', 'application/json; charset=utf-16le', 'application/json; charset=bogus', 'application/jsonx', 'application/problem+json', 'text/json', ';;;', '*/*', 'application/json, text/plain', `application/json; ${'x'.repeat(2000)}`];

export const malformed = {
  truncated(d, draft) {
    const t = text(draft);
    draft.body = Buffer.from(t.slice(0, d.int(0, Math.max(0, t.length - 1))));
    return 'truncated-json';
  },
  trailing(d, draft) {
    draft.body = Buffer.from(
      text(draft) + d.pick(['}', ']', ',', 'x', '\n{}', ' null', '\u0000', '"']),
    );
    return 'trailing-garbage';
  },
  notJson(d, draft) {
    draft.body = Buffer.from(d.pick(NOT_JSON));
    return 'not-json';
  },
  nonObject(d, draft) {
    draft.body = Buffer.from(d.pick(NON_OBJECT));
    return 'json-not-an-object';
  },
  empty(d, draft) {
    draft.body = Buffer.from(d.pick(['', ' ', '\n\t \r\n']));
    if (d.chance(0.3)) delete draft.headers['content-type'];
    return 'empty-body';
  },
  bom(d, draft) {
    draft.body = Buffer.from(`\ufeff${text(draft)}`);
    return 'utf8-bom';
  },
  duplicateKeys(d, draft, ctx) {
    if (!objectRoot(draft)) return null;
    const keys = ctx.op.bodySchema?.required?.length
      ? ctx.op.bodySchema.required
      : Object.keys(draft.value);
    if (keys.length === 0) return null;
    const key = JSON.stringify(d.pick(keys));
    const wrong = d.pick(['null', '1', '"x"', '[]', '{}', 'true']);
    const t = text(draft);
    // JSON.parse keeps the last duplicate: wrong last, or wrong first (the valid one wins).
    draft.body = Buffer.from(
      d.chance(0.5)
        ? `${t.slice(0, -1)}${t.length > 2 ? ',' : ''}${key}:${wrong}}`
        : `{${key}:${wrong}${t.length > 2 ? ',' : ''}${t.slice(1)}`,
    );
    return 'duplicate-member';
  },
  contentType(d, draft) {
    const type = d.pick(CONTENT_TYPES);
    draft.headers['content-type'] = type;
    if (type === 'application/x-www-form-urlencoded')
      draft.body = Buffer.from(d.pick(['name=x&stages=1', 'a[b]=1', '%ff=%fe', text(draft)]));
    else if (type.startsWith('multipart/'))
      draft.body = Buffer.from(
        `--fz\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--fz--\r\n`,
      );
    else if (type.includes('utf-16')) draft.body = Buffer.from(`\ufeff${text(draft)}`, 'utf16le');
    else if (type.includes('iso-8859-1'))
      draft.body = Buffer.from(text(draft).replace(/"([^"\\]{0,20})"/, '"$1é"'), 'latin1');
    else if (type === 'application/xml')
      draft.body = Buffer.from('<?xml version="1.0"?><pipeline><name>x</name></pipeline>');
    return 'content-type';
  },
  noContentType(d, draft) {
    delete draft.headers['content-type'];
    return 'no-content-type';
  },
  contentEncoding(d, draft) {
    const enc = d.pick(['gzip', 'gzip', 'deflate', 'br', 'x-unknown', 'identity, gzip']);
    draft.headers['content-encoding'] = enc;
    if (enc === 'gzip' && d.chance(0.5)) draft.body = gzipSync(Buffer.from(text(draft)));
    return `content-encoding-${enc.split(',')[0]}`;
  },
  chunked(d, draft) {
    draft.chunked = true;
    return 'chunked-transfer';
  },
  numberTokens(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) => l.schema && typesOf(l.schema).includes('integer'),
    );
    if (places.length === 0) return null;
    const token = d.pick([
      '1e309',
      '-1e309',
      '1.0',
      '1E2',
      '0.1e1',
      '9007199254740993',
      '-0',
      '1e-400',
      '123456789012345678901234567890',
      '0x10',
      '01',
      '+1',
      '.5',
      'Infinity',
      'NaN',
      '1.5',
      '-1',
    ]);
    draft.value = setAt(draft.value, d.pick(places).path, new Raw(token));
    return 'number-token';
  },
};

// ---------------------------------------------------------------- wrongly typed
function wrongValues(schema) {
  const types = schema ? typesOf(schema) : [];
  const pool = [];
  if (!types.includes('string')) pool.push('1', '', 'true', 'x'.repeat(300));
  if (!types.includes('integer') && !types.includes('number'))
    pool.push(0, -1, 1.5, 2 ** 53, 1e300);
  if (!types.includes('boolean')) pool.push(true, false);
  if (!types.includes('null')) pool.push(null);
  if (!types.includes('array')) pool.push([], ['a'], [null]);
  if (!types.includes('object')) pool.push({}, { a: 'b' });
  // Right type, wrong value: out of range, off the enumeration.
  if (schema?.enum)
    pool.push(
      String(schema.enum[0]).toLowerCase(),
      ` ${schema.enum[0]}`,
      `${schema.enum[0]}\u0000`,
    );
  if (types.includes('integer'))
    pool.push((schema.minimum ?? 0) - 1, (schema.maximum ?? 2 ** 31) + 1, -(2 ** 63), 2 ** 64);
  if (types.includes('string') && schema.minLength) pool.push('');
  if (types.includes('array') && schema.minItems) pool.push([]);
  return pool;
}

const smallJson = fc.jsonValue({ maxDepth: 3 });
// prettier-ignore
const EXTRA_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '$where', '__defineGetter__', '', ' ', 'ünïcødé', 'a.b', 'a/b', '0', 'x'.repeat(1000), 'id', 'applicationId'];

export const types = {
  swap(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter((l) => l.schema);
    if (places.length === 0) return null;
    const place = d.pick(places);
    draft.value = setAt(draft.value, place.path, d.pick(wrongValues(place.schema)));
    return place.absent ? 'type-swap-added' : 'type-swap';
  },
  nullify(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter((l) => !l.absent);
    if (places.length === 0) return null;
    draft.value = setAt(draft.value, d.pick(places).path, null);
    return 'null-member';
  },
  missingRequired(d, draft, ctx) {
    const owners = [
      { path: [], schema: ctx.op.bodySchema },
      ...placesOf(draft, ctx).filter((l) => !l.absent && l.schema?.required?.length),
    ];
    const candidates = owners.filter(
      (o) =>
        o.schema?.required?.length &&
        getAt(draft.value, o.path) &&
        typeof getAt(draft.value, o.path) === 'object',
    );
    if (candidates.length === 0) return null;
    const owner = d.pick(candidates);
    draft.value = deleteAt(draft.value, [...owner.path, d.pick(owner.schema.required)]);
    return 'missing-required';
  },
  extraMembers(d, draft, ctx) {
    const objects = [{ path: [] }, ...placesOf(draft, ctx).filter((l) => !l.absent)].filter((l) => {
      const v = getAt(draft.value, l.path);
      return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw);
    });
    if (objects.length === 0) return null;
    const target = getAt(draft.value, d.pick(objects).path);
    for (let i = d.int(1, 3); i > 0; i--) {
      setMember(
        target,
        d.pick(EXTRA_KEYS),
        d.pick([
          { polluted: true },
          { prototype: { polluted: true } },
          1,
          'x',
          null,
          [1],
          d.sample(smallJson),
        ]),
      );
    }
    return 'extra-members';
  },
  wrongRoot(d, draft) {
    draft.value = d.pick([[draft.value], 'string', 1, true, null, [], [[]]]);
    return 'wrong-root-type';
  },
  stringNumbers(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) => l.schema && typesOf(l.schema).some((t) => t === 'integer' || t === 'boolean'),
    );
    if (places.length === 0) return null;
    const place = d.pick(places);
    const current = getAt(draft.value, place.path);
    draft.value = setAt(
      draft.value,
      place.path,
      d.pick([`${current ?? 1}`, ' 1', '0x1', '1e3', '01', 'true', 'false', 'yes', '1,000']),
    );
    return 'scalar-as-string';
  },
  arrayObjectSwap(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) => !l.absent && Array.isArray(getAt(draft.value, l.path)),
    );
    if (places.length === 0) return null;
    const place = d.pick(places);
    const arr = getAt(draft.value, place.path);
    draft.value = setAt(
      draft.value,
      place.path,
      d.chance(0.5) ? Object.fromEntries(arr.map((v, i) => [String(i), v])) : [arr],
    );
    return 'array-object-swap';
  },
};

// ---------------------------------------------------------------- wrongly encoded
// prettier-ignore
const SURROGATES = ['\ud800', '\udfff', 'a\ud800b', '\udc00\ud800', '\ud83d', 'x\udbff'];
// prettier-ignore
const INVALID_UTF8 = [[0xff], [0xfe, 0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc3]];
// prettier-ignore
const CONTROL = ['\u0001', 'a\u007fb', '\u0085', 'line\r\nbreak', '\u001b[31mred', '\t', '\u0008'];
// prettier-ignore
const EXOTIC = ['💩💩💩', 'e\u0301\u0301\u0301', '\u202eevil', '\uffff', '\ufffe', '\u2028\u2029', 'ﷺ', '𝕏𝕐', '\u{10ffff}', '👩‍👩‍👧‍👦', '\u00a0', 'İı', 'ß'];
// prettier-ignore
export const BAD_DATES = ['0000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00.000Z', '275760-09-13T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59-23:59', '0001-01-01T00:30:00+01:00', '0000-12-31T23:00:00-01:00', '1000-01-01T00:00:00Z', '4714-11-24T00:00:00-12:00', '2024-02-30T00:00:00Z', '2023-02-29T00:00:00Z', '2024-01-01T24:00:00Z', '2023-12-31T23:59:60Z', '2024-01-01T00:00:00+24:00', '2024-01-01T00:00:00+23:59', '2024-01-01T00:00:00.1234567890123456789Z', '2024-01-01t00:00:00z', '2024-01-01T00:00:00', '2024-01-01', '', 'now', '2024-13-01T00:00:00Z', '2024-00-10T00:00:00Z', '99999-01-01T00:00:00Z', '2024-01-01T00:00:00.Z', '2024-01-01T00:00:00,5Z', '２０２４-01-01T00:00:00Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '2100-02-29T00:00:00Z', '-271821-04-20T00:00:00Z', '0000-00-00T00:00:00Z', '1900-01-01T00:00:00-00:00'];

/** A string place, a free-form object (add a member), or a member name of one: where to put `s`. */
function plantString(d, draft, ctx, s, { freeFirst }) {
  const places = placesOf(draft, ctx);
  const free = places.filter(
    (l) =>
      (l.schema && isFreeForm(l.schema)) ||
      (l.free &&
        !l.absent &&
        typeof getAt(draft.value, l.path) === 'object' &&
        getAt(draft.value, l.path) !== null &&
        !Array.isArray(getAt(draft.value, l.path))),
  );
  const strings = stringPlaces(draft, ctx);
  const where = d.weighted({
    free: free.length ? (freeFirst ? 5 : 2) : 0,
    name: free.length ? 1 : 0,
    string: strings.length ? 4 : 0,
  });
  if (where === 'string') {
    const place = d.pick(strings);
    draft.value = setAt(draft.value, place.path, d.chance(0.5) ? s : `fz${s}fz`);
    return `string:${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
  }
  if (where === 'free' || where === 'name') {
    const place = d.pick(free);
    let obj = getAt(draft.value, place.path);
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
      obj = {};
      draft.value = setAt(draft.value, place.path, obj);
    }
    if (where === 'name') setMember(obj, `k${s}`, 1);
    else setMember(obj, 'fz', d.chance(0.7) ? s : { nested: [s] });
    return `${where === 'name' ? 'member-name' : 'free-form'}:${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
  }
  if (objectRoot(draft)) {
    setMember(draft.value, `fz${s}`, s);
    return 'unknown-member';
  }
  return null;
}

export const encoding = {
  loneSurrogate(d, draft, ctx) {
    const at = plantString(d, draft, ctx, d.pick(SURROGATES), { freeFirst: true });
    return at && `lone-surrogate@${at}`;
  },
  nul(d, draft, ctx) {
    const at = plantString(d, draft, ctx, d.pick(['\u0000', 'a\u0000b']), { freeFirst: false });
    return at && `nul@${at}`;
  },
  invalidUtf8(d, draft, ctx) {
    const strings = stringPlaces(draft, ctx);
    if (strings.length === 0) return null;
    const place = d.pick(strings);
    draft.value = setAt(
      draft.value,
      place.path,
      new Bytes(
        Buffer.concat([Buffer.from('fz'), Buffer.from(d.pick(INVALID_UTF8)), Buffer.from('fz')]),
      ),
    );
    return `invalid-utf8@${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
  },
  controlChars(d, draft, ctx) {
    const at = plantString(d, draft, ctx, d.pick(CONTROL), { freeFirst: false });
    return at && `control-characters@${at}`;
  },
  exoticUnicode(d, draft, ctx) {
    const at = plantString(d, draft, ctx, d.pick(EXOTIC), { freeFirst: false });
    return at && `exotic-unicode@${at}`;
  },
  dates(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter((l) => l.schema?.format === 'date-time');
    if (places.length === 0) return null;
    const place = d.pick(places);
    const bad = d.pick(BAD_DATES);
    draft.value = setAt(draft.value, place.path, bad);
    return `date:${label(place.path, ctx.op.bodySchema, ctx.resolve)}=${bad || '(empty)'}`;
  },
  latin1Body(d, draft, ctx) {
    const strings = stringPlaces(draft, ctx);
    if (strings.length === 0) return null;
    draft.value = setAt(draft.value, d.pick(strings).path, 'café ünï');
    draft.body = Buffer.from(text(draft), 'latin1');
    return 'latin1-body';
  },
  rawEscapes(d, draft, ctx) {
    const strings = stringPlaces(draft, ctx);
    if (strings.length === 0) return null;
    const token = d.pick([
      '"\\ud800\\ud800"',
      '"\\uDC00"',
      '"\\uD83D\\uDE00"',
      '"\\u0000"',
      '"\\u00e9\\u0301"',
      '"\\/\\b\\f"',
      '"\\uFFFF"',
    ]);
    draft.value = setAt(draft.value, d.pick(strings).path, new Raw(token));
    return `escape:${token}`;
  },
};
