// Values from the OpenAPI request schemas (fast-check arbitraries), the places inside a generated
// body that mutations aim at, and the JSON writer that can put raw tokens and raw bytes in a body.
import fc from 'fast-check';

/** A JSON token written verbatim (a number like 1e999, or a prepared deep document). */
export class Raw {
  constructor(text) {
    this.text = text;
  }
}
/** Raw bytes written between the quotes of a JSON string (e.g. invalid UTF-8). */
export class Bytes {
  constructor(buf) {
    this.buf = buf;
  }
}

/** Serialises a value with Raw and Bytes pieces into a Buffer. */
export function toJsonBuffer(value) {
  const parts = [];
  const write = (v) => {
    if (v instanceof Raw) parts.push(v.text);
    else if (v instanceof Bytes) parts.push('"', v.buf, '"');
    else if (Array.isArray(v)) {
      parts.push('[');
      v.forEach((item, i) => {
        if (i > 0) parts.push(',');
        write(item === undefined ? null : item);
      });
      parts.push(']');
    } else if (v !== null && typeof v === 'object') {
      parts.push('{');
      let first = true;
      for (const key of Object.keys(v)) {
        if (v[key] === undefined) continue;
        if (!first) parts.push(',');
        first = false;
        parts.push(JSON.stringify(key), ':');
        write(v[key]);
      }
      parts.push('}');
    } else if (typeof v === 'number' && !Number.isFinite(v)) parts.push('null');
    else parts.push(JSON.stringify(v) ?? 'null');
  };
  write(value);
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

/** Sets an own enumerable member, even `__proto__`. */
export function setMember(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

const schemaTypes = (schema) => (schema.type === undefined ? [] : [].concat(schema.type));
export const isFreeForm = (schema) =>
  schema !== undefined && schemaTypes(schema).includes('object') && !schema.properties;

/** Printable Unicode scalar values, astral ones included (cheaper to build than the 'grapheme' unit). */
const unicodeChar = fc
  .oneof(
    fc.integer({ min: 0x20, max: 0x7e }),
    fc.integer({ min: 0xa0, max: 0xd7ff }),
    fc.integer({ min: 0xe000, max: 0xfffd }),
    fc.integer({ min: 0x10000, max: 0x10ffff }),
  )
  .map((cp) => String.fromCodePoint(cp));
const asciiText = (min, max) =>
  fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' });
const anyText = (min, max) => fc.string({ minLength: min, maxLength: max, unit: unicodeChar });

/** A well-formed RFC 3339 date-time between 1971 and 2100, with Z or an offset. */
export const dateTimeArb = fc
  .record({
    ms: fc.integer({ min: 31_536_000_000, max: 4_102_444_800_000 }),
    form: fc.constantFrom('iso', 'iso', 'seconds', 'offset'),
  })
  .map(({ ms, form }) => {
    const iso = new Date(ms).toISOString();
    if (form === 'seconds') return iso.replace(/\.\d{3}Z$/, 'Z');
    if (form === 'offset') return iso.replace(/Z$/, '+02:00');
    return iso;
  });

/** Free-form JSON (policies, metadata, data, input): small objects of ordinary values. */
export const freeFormArb = fc.dictionary(asciiText(1, 12), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 4,
});

/**
 * A valid-ish value for `schema` (already resolved at the top; nested `$ref`s resolved here).
 * Sizes stay small: the oversized family makes the big ones.
 */
export function schemaArb(schema, resolve) {
  const s = resolve(schema ?? {});
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const types = schemaTypes(s);
  if (types.length === 0) return fc.oneof(asciiText(0, 20), fc.jsonValue({ maxDepth: 2 }));
  const arbs = types.map((type) => typeArb(type, s, resolve));
  if (arbs.length === 1) return arbs[0];
  // Nullable fields: null now and then, the real type mostly.
  return fc.oneof(
    ...types.map((type, i) => ({ arbitrary: arbs[i], weight: type === 'null' ? 1 : 4 })),
  );
}

function typeArb(type, s, resolve) {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const lo = Math.max(s.minimum ?? -1000, Number.MIN_SAFE_INTEGER);
      const hi = Math.min(s.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER);
      return fc.oneof(
        { arbitrary: fc.integer({ min: lo, max: Math.min(hi, lo + 100) }), weight: 4 },
        { arbitrary: fc.constantFrom(lo, hi), weight: 1 },
      );
    }
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum, max: s.maximum });
    case 'string': {
      if (s.format === 'date-time') return dateTimeArb;
      const min = s.minLength ?? 0;
      const max = Math.max(min, Math.min(s.maxLength ?? 40, 40));
      let arb = fc.oneof(
        { arbitrary: asciiText(min, max), weight: 4 },
        { arbitrary: anyText(min, max), weight: 1 },
      );
      if (s['x-no-control-characters']) arb = arb.map((v) => v.replace(/\p{Cc}/gu, '_'));
      return arb;
    }
    case 'array': {
      const minLength = s.minItems ?? 0;
      const maxLength = Math.max(minLength, Math.min(s.maxItems ?? 4, 4));
      return fc.array(schemaArb(s.items ?? {}, resolve), { minLength, maxLength });
    }
    case 'object': {
      if (!s.properties) return freeFormArb;
      const model = {};
      for (const [name, prop] of Object.entries(s.properties))
        model[name] = schemaArb(prop, resolve);
      return fc.record(model, { requiredKeys: s.required ?? [] });
    }
    default:
      throw new Error(`schema type ${type} not handled`);
  }
}

/**
 * The places of a body that mutations aim at: every present member and item (with its schema,
 * undefined inside free-form JSON), and every absent optional member of a described object.
 * Each: { path: (string|number)[], schema, free, absent }.
 */
export function locations(value, schema, resolve) {
  const out = [];
  const walk = (v, s, path, free) => {
    const rs = s ? resolve(s) : undefined;
    if (path.length > 0) out.push({ path, schema: rs, free, absent: false });
    if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, rs?.items, [...path, i], free || !rs));
    } else if (
      v !== null &&
      typeof v === 'object' &&
      !(v instanceof Raw) &&
      !(v instanceof Bytes)
    ) {
      const props = rs?.properties;
      for (const key of Object.keys(v)) walk(v[key], props?.[key], [...path, key], free || !props);
      if (props) {
        for (const [key, ps] of Object.entries(props)) {
          if (!(key in v))
            out.push({ path: [...path, key], schema: resolve(ps), free: false, absent: true });
        }
      }
    }
  };
  walk(value, schema, [], false);
  return out;
}

export function getAt(root, path) {
  return path.reduce(
    (node, key) => (node === null || node === undefined ? undefined : node[key]),
    root,
  );
}

/** Sets `root[path] = value` (root must be an object or array); returns root, or value for []. */
export function setAt(root, path, value) {
  if (path.length === 0) return value;
  const parent = getAt(root, path.slice(0, -1));
  if (parent === null || typeof parent !== 'object') return root;
  setMember(parent, path[path.length - 1], value);
  return root;
}

export function deleteAt(root, path) {
  const parent = getAt(root, path.slice(0, -1));
  if (parent === null || typeof parent !== 'object') return root;
  if (Array.isArray(parent)) parent.splice(Number(path[path.length - 1]), 1);
  else delete parent[path[path.length - 1]];
  return root;
}

/**
 * A place's name for reports: its members along the schema (array indexes left out), `*` from the
 * first free-form object on (its member names are random), e.g. `stages.policies.*`.
 */
export function label(path, schema, resolve) {
  const out = [];
  let s = schema ? resolve(schema) : undefined;
  for (const k of path) {
    if (typeof k === 'number') {
      s = s?.items ? resolve(s.items) : undefined;
      continue;
    }
    if (!s?.properties) {
      out.push('*');
      break;
    }
    out.push(k);
    s = s.properties[k] ? resolve(s.properties[k]) : undefined;
  }
  return out.join('.');
}

/** The JSON Pointer of a path, for reports. */
export const pointer = (path) =>
  path.map((k) => `/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

export const typesOf = schemaTypes;
