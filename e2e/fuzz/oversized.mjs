// Oversized requests: bodies over the limits (declared, real, chunked), strings and arrays past
// their maxima, deep nesting, many members, long numbers, and bodies exactly at the limits.
// Sizes stay moderate in the 2,000-request sample; `long` (npm run fuzz) goes bigger, rarely.
import {
  Raw,
  getAt,
  isFreeForm,
  locations,
  setAt,
  setMember,
  toJsonBuffer,
  typesOf,
  label,
} from './schema-values.mjs';

const placesOf = (draft, ctx) => locations(draft.value, ctx.op.bodySchema ?? {}, ctx.resolve);
const isResultOp = (ctx) => ctx.op.key === 'POST /stages/{stageId}/result';
/** api-spec Limits: the result body limit; every other body: API_MAX_BODY_BYTES. */
const limitOf = (ctx) => (isResultOp(ctx) ? ctx.limits.resultBodyBytes : ctx.limits.maxBodyBytes);

/** Big documents are the same for every case that asks: made once, shared (Raw is never edited). */
const made = new Map();
const once = (key, make) => {
  if (!made.has(key)) made.set(key, new Raw(make()));
  return made.get(key);
};

function repeatToBytes(unit, bytes) {
  const unitBytes = Buffer.byteLength(unit);
  return unit.repeat(Math.ceil(bytes / unitBytes));
}

export const oversized = {
  /** Content-Length over the limit, only a few bytes sent: the server must answer 413 at once. */
  declaredOverLimit(d, draft, ctx) {
    draft.declaredLength = d.pick([limitOf(ctx) + 1, limitOf(ctx) * 4, 99_999_999_999]);
    draft.body = Buffer.from('{"name":"');
    return 'declared-over-limit';
  },
  /** A real body one byte over the limit (the full API_MAX_BODY_BYTES only in long runs). */
  realOverLimit(d, draft, ctx) {
    const limit = limitOf(ctx);
    if (!isResultOp(ctx) && !(ctx.long && d.chance(0.2))) return null;
    const filler = repeatToBytes('x', limit + 1 - 20);
    draft.body = Buffer.from(`{"result":"${filler}"}`);
    return 'real-over-limit';
  },
  /** Chunked (no Content-Length) past the limit: the limit must hold while streaming. */
  chunkedOverLimit(d, draft, ctx) {
    const limit = limitOf(ctx);
    if (!isResultOp(ctx) && !(ctx.long && d.chance(0.2))) return null;
    draft.body = Buffer.from(`{"result":"${repeatToBytes('y', limit + 1024)}"}`);
    draft.chunked = true;
    return 'chunked-over-limit';
  },
  longString(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) => l.schema && typesOf(l.schema).includes('string'),
    );
    if (places.length === 0) return null;
    const place = d.pick(places);
    const s = place.schema;
    const maxBytes = s['x-max-bytes'];
    const choices = [];
    if (s.maxLength !== undefined)
      choices.push(
        ['over-maxLength', 'x'.repeat(s.maxLength + 1)],
        ['astral-at-maxLength', '😀'.repeat(s.maxLength)],
        ['astral-over-maxLength', '😀'.repeat(s.maxLength + 1)],
      );
    if (maxBytes !== undefined)
      choices.push(
        ['over-max-bytes', 'é'.repeat(Math.floor(maxBytes / 2) + 1)],
        ['ascii-over-max-bytes', 'x'.repeat(maxBytes + 1)],
      );
    // Past what a database column may hold, yet small enough for every body limit.
    choices.push(['65', 'v'.repeat(65)], ['256', 'v'.repeat(256)], ['4KiB', 'v'.repeat(4096)]);
    choices.push(['64KiB', 'z'.repeat(65_536)]);
    if (ctx.long || d.chance(0.15)) choices.push(['1MiB', 'w'.repeat(1 << 20)]);
    const [name, value] = d.pick(choices);
    draft.value = setAt(draft.value, place.path, value);
    return `long-string:${name}@${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
  },
  hugeArray(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) => l.schema && typesOf(l.schema).includes('array'),
    );
    if (places.length === 0) return null;
    const place = d.pick(places);
    const current = getAt(draft.value, place.path);
    const item = Array.isArray(current) && current.length > 0 ? current[0] : 'x';
    const max = place.schema.maxItems;
    const count = d.pick([max !== undefined ? max + 1 : 1001, 1000, ctx.long ? 20_000 : 5000]);
    if (d.chance(0.3)) {
      // [0,0,…]: the cheapest bytes for the most elements (issue 10 item 1); ~2 bytes each.
      const n = d.pick(ctx.long ? [100_000, 500_000, 1_000_000] : [50_000, 150_000]);
      draft.value = setAt(
        draft.value,
        place.path,
        once(`zeros-${n}`, () => `[${'0,'.repeat(n - 1)}0]`),
      );
      return `huge-array:zeros-${n}@${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
    }
    draft.value = setAt(
      draft.value,
      place.path,
      Array.from({ length: count }, () => item),
    );
    return `huge-array:${count}@${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
  },
  deepNesting(d, draft, ctx) {
    const depth = d.pick(
      ctx.long ? [65, 1000, 100_000, 1_000_000] : [65, 200, 1000, 20_000, 100_000],
    );
    const doc = d.chance(0.5)
      ? once(`arrays-${depth}`, () => `${'['.repeat(depth)}${']'.repeat(depth)}`)
      : once(`objects-${depth}`, () => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);
    const free = placesOf(draft, ctx).filter(
      (l) => l.schema && (isFreeForm(l.schema) || typesOf(l.schema).length === 0),
    );
    if (free.length > 0 && d.chance(0.7)) {
      const place = d.pick(free);
      draft.value = setAt(draft.value, place.path, isFreeForm(place.schema) ? { deep: doc } : doc);
      return `deep-nesting:${depth}@${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
    }
    if (draft.value !== null && typeof draft.value === 'object' && !Array.isArray(draft.value))
      setMember(draft.value, 'deep', doc);
    else draft.value = doc;
    return `deep-nesting:${depth}@root`;
  },
  manyMembers(d, draft, ctx) {
    const n = d.pick(ctx.long ? [10_000, 100_000] : [2000, 20_000]);
    const members = once(
      `members-${n}`,
      () => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`,
    );
    const free = placesOf(draft, ctx).filter((l) => l.schema && isFreeForm(l.schema));
    if (free.length > 0 && d.chance(0.7)) {
      const place = d.pick(free);
      draft.value = setAt(draft.value, place.path, members);
      return `many-members:${n}@${label(place.path, ctx.op.bodySchema, ctx.resolve)}`;
    }
    // At the top level: the members first, then the body's own.
    const own =
      draft.value !== null && typeof draft.value === 'object' && !Array.isArray(draft.value)
        ? toJsonBuffer(draft.value)
        : null;
    draft.body =
      own && own.length > 2
        ? Buffer.concat([Buffer.from(`${members.text.slice(0, -1)},`), own.subarray(1)])
        : Buffer.from(members.text);
    return `many-members:${n}@root`;
  },
  longNumber(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) => l.schema && typesOf(l.schema).includes('integer'),
    );
    if (places.length === 0) return null;
    const digits = d.pick([20, 400, 10_000, ctx.long ? 1_000_000 : 100_000]);
    draft.value = setAt(
      draft.value,
      d.pick(places).path,
      new Raw(`${d.chance(0.3) ? '-' : ''}${'9'.repeat(digits)}`),
    );
    return `long-number:${digits}-digits`;
  },
  /** Valid, but at the limits: a string at maxLength / x-max-bytes, an array at maxItems. */
  atLimits(d, draft, ctx) {
    const places = placesOf(draft, ctx).filter(
      (l) =>
        l.schema &&
        (l.schema.maxLength !== undefined ||
          l.schema['x-max-bytes'] !== undefined ||
          l.schema.maxItems !== undefined),
    );
    if (places.length === 0) return null;
    const names = [];
    for (let i = d.int(1, 3); i > 0; i--) {
      const place = d.pick(places);
      const s = place.schema;
      let value;
      if (s.maxItems !== undefined) {
        const current = getAt(draft.value, place.path);
        value = Array.from({ length: s.maxItems }, (_, j) =>
          Array.isArray(current) && current.length ? current[j % current.length] : `i${j}`,
        );
      } else if (s['x-max-bytes'] !== undefined && typesOf(s).includes('string'))
        value = d.chance(0.5) ? 'x'.repeat(s['x-max-bytes']) : 'é'.repeat(s['x-max-bytes'] / 2);
      else if (s.maxLength !== undefined)
        value = d.chance(0.5) ? 'x'.repeat(s.maxLength) : '😀'.repeat(s.maxLength);
      else continue;
      draft.value = setAt(draft.value, place.path, value);
      names.push(label(place.path, ctx.op.bodySchema, ctx.resolve));
    }
    return names.length ? `at-limits:${names.join(',')}` : null;
  },
};
