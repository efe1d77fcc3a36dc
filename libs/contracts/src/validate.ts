// The one validation entry point: a shared ajv instance (strict types, all errors, no coercion),
// the custom keywords and formats of the contract, and the mapping of ajv errors to the
// `{ field, message }` items of a `validation_failed` problem (addendum §1, §3).
import { Ajv } from 'ajv';
import type { ErrorObject, KeywordDefinition, ValidateFunction } from 'ajv';
import { MAX_DATE_TIME, MIN_DATE_TIME, dateTimeProblem, isRfc3339DateTime } from './datetime.js';

/** One violation: `field` is a JSON Pointer into the body (`""` = whole body), or a parameter name. */
export interface FieldError {
  field: string;
  message: string;
}

export type Validation<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };
export type Validator<T> = (data: unknown) => Validation<T>;

/** A JSON Schema object as exported by this package (deeply frozen). */
export type JsonSchema = Readonly<Record<string, unknown>>;

export interface CompileOptions {
  /**
   * Request semantics (default true): before validation, members the schema does not declare are
   * dropped (unless it is closed with `additionalProperties: false`) and optional members sent as
   * `null` are removed. Free-form objects (no `properties`) are never touched.
   * Pass false to validate a document exactly as it is (e.g. a server response).
   */
  normalise?: boolean;
}

/** UTF-8 size of a value: a string's own bytes, anything else as compact JSON. */
export function utf8Bytes(value: unknown): number {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return Buffer.byteLength(text, 'utf8');
}

const CONTROL_CHARACTER = /\p{Cc}/u;

const keywords: KeywordDefinition[] = [
  {
    // Limits "in bytes": UTF-8 bytes of a string, or of the compact JSON of any other value.
    keyword: 'maxBytes',
    schemaType: 'number',
    errors: false,
    validate: (limit: number, data: unknown) => utf8Bytes(data) <= limit,
  },
  {
    // Unicode category Cc: U+0000..U+001F and U+007F..U+009F.
    keyword: 'noControlCharacters',
    type: 'string',
    schemaType: 'boolean',
    errors: false,
    validate: (enabled: boolean, data: string) => !enabled || !CONTROL_CHARACTER.test(data),
  },
];

const ajvOptions = {
  strict: true,
  allowUnionTypes: true,
  coerceTypes: false,
  useDefaults: false,
  verbose: true,
  // `date-time` here is RFC 3339 *with* an offset (addendum §1); the response form adds a pattern.
  formats: { 'date-time': { type: 'string' as const, validate: isRfc3339DateTime } },
  keywords,
};
/** Reports every violation; it only ever sees a body whose long arrays were cut (see `checker`). */
const ajv = new Ajv({ ...ajvOptions, allErrors: true });
/** Stops at the first violation: cheap on any body, so it decides whether a body is valid. */
const firstErrorAjv = new Ajv({ ...ajvOptions, allErrors: false });

const registry = new Map<string, JsonSchema>();
const compiled = new WeakMap<object, ValidateFunction>();
const compiledFirstError = new WeakMap<object, ValidateFunction>();

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * Adds named schemas (with `$id`) to the shared instance so others can `$ref` them.
 * Schemas are frozen: ajv caches compiled code by object identity.
 */
export function registerSchemas(...schemas: JsonSchema[]): void {
  for (const schema of schemas) {
    const id = schema.$id;
    if (typeof id !== 'string') throw new Error('a registered schema needs an $id');
    if (registry.get(id) === schema) continue;
    deepFreeze(schema);
    ajv.addSchema(schema as object);
    firstErrorAjv.addSchema(schema as object);
    registry.set(id, schema);
  }
}

/** Every schema registered so far, in registration order (for OpenAPI generation). */
export function registeredSchemas(): JsonSchema[] {
  return [...registry.values()];
}

function resolveRef(schema: unknown): unknown {
  let current = schema;
  for (
    let depth = 0;
    depth < 32 && isRecord(current) && typeof current.$ref === 'string';
    depth++
  ) {
    current = registry.get(current.$ref);
  }
  return current;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/**
 * Items of an array beyond which no item is looked at once the body is known to be invalid: an
 * array with `maxItems` keeps one item more than that (so the count is still reported), any other
 * at least this many. Reporting "all violations found" must not cost a 400 more than a body's size
 * in error objects: a million bad items would otherwise take seconds and tens of megabytes.
 */
const REPORTED_ITEMS = 100;

function reportedItems(schema: Record<string, unknown>): number {
  const max = schema.maxItems;
  return Math.max(typeof max === 'number' ? max + 1 : 0, REPORTED_ITEMS);
}

/** Request normalisation guided by the schema (see CompileOptions.normalise). Never mutates. */
function prepare(data: unknown, schemaRef: unknown): unknown {
  const schema = resolveRef(schemaRef);
  if (!isRecord(schema)) return data;
  if (Array.isArray(data)) {
    const items = schema.items;
    if (!isRecord(items)) return data;
    // Over its limit the array is invalid whatever its items are: normalise only those reported.
    const over = typeof schema.maxItems === 'number' && data.length > schema.maxItems;
    return (over ? data.slice(0, reportedItems(schema)) : data).map((item) => prepare(item, items));
  }
  const properties = schema.properties;
  if (!isRecord(data) || !isRecord(properties)) return data;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as unknown[]) : []);
  const closed = schema.additionalProperties === false;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    if (Object.hasOwn(properties, key)) {
      if (value === undefined || (value === null && !required.has(key))) continue;
      setOwn(out, key, prepare(value, properties[key]));
    } else if (closed) {
      setOwn(out, key, value);
    }
  }
  return out;
}

/** A copy of an invalid body with every array the schema describes cut to the items reported. */
function reported(data: unknown, schemaRef: unknown): unknown {
  const schema = resolveRef(schemaRef);
  if (!isRecord(schema)) return data;
  if (Array.isArray(data)) {
    const items = schema.items;
    const kept = data.length > reportedItems(schema) ? data.slice(0, reportedItems(schema)) : data;
    return isRecord(items) ? kept.map((item) => reported(item, items)) : kept;
  }
  const properties = schema.properties;
  if (!isRecord(data) || !isRecord(properties)) return data;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    setOwn(out, key, Object.hasOwn(properties, key) ? reported(value, properties[key]) : value);
  }
  return out;
}

/** JSON Pointer escaping of one reference token (RFC 6901). */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

function typeMessage(type: unknown): string {
  const types = Array.isArray(type) ? type : [type];
  return `must be ${types.map((t) => ARTICLE[String(t)] ?? String(t)).join(' or ')}`;
}

function plural(n: unknown, word: string): string {
  return `${String(n)} ${word}${n === 1 ? '' : 's'}`;
}

function toFieldError(e: ErrorObject): FieldError {
  const field = e.instancePath;
  const limit = e.schema;
  switch (e.keyword) {
    case 'required':
      return {
        field: `${field}/${escapePointerToken(String(e.params.missingProperty))}`,
        message: 'is required',
      };
    case 'additionalProperties':
      return {
        field: `${field}/${escapePointerToken(String(e.params.additionalProperty))}`,
        message: 'is not allowed',
      };
    case 'type':
      return { field, message: typeMessage(limit) };
    case 'minLength':
      return { field, message: `must have at least ${plural(limit, 'character')}` };
    case 'maxLength':
      return { field, message: `must have at most ${plural(limit, 'character')}` };
    case 'minItems':
      return { field, message: `must have at least ${plural(limit, 'item')}` };
    case 'maxItems':
      return { field, message: `must have at most ${plural(limit, 'item')}` };
    case 'minimum':
      return { field, message: `must be at least ${String(limit)}` };
    case 'maximum':
      return { field, message: `must be at most ${String(limit)}` };
    case 'exclusiveMinimum':
      return { field, message: `must be greater than ${String(limit)}` };
    case 'exclusiveMaximum':
      return { field, message: `must be less than ${String(limit)}` };
    case 'enum':
      return { field, message: `must be one of: ${(limit as unknown[]).map(String).join(', ')}` };
    case 'const':
      return { field, message: `must be ${JSON.stringify(limit)}` };
    case 'format':
      if (limit !== 'date-time') return { field, message: `must be a valid ${String(limit)}` };
      return {
        field,
        message:
          typeof e.data === 'string' && dateTimeProblem(e.data) === 'range'
            ? `must be from ${MIN_DATE_TIME} to ${MAX_DATE_TIME}`
            : 'must be an RFC 3339 date-time with an offset (Z or ±hh:mm)',
      };
    case 'pattern':
      return { field, message: `must match the pattern ${String(limit)}` };
    case 'maxBytes':
      return { field, message: `must be at most ${plural(limit, 'byte')}` };
    case 'noControlCharacters':
      return { field, message: 'must not contain control characters' };
    default:
      return { field, message: e.message ?? 'is invalid' };
  }
}

/** Maps ajv errors to field errors, in document order, without duplicates. */
export function toFieldErrors(errors: readonly ErrorObject[]): FieldError[] {
  return dedupeErrors(errors.map(toFieldError));
}

/** Removes repeated `{ field, message }` pairs, keeping the first occurrence's order. */
export function dedupeErrors(errors: readonly FieldError[]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const key = `${e.field}\u0000${e.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(e);
    }
  }
  return out;
}

/** Result of a validation that also hands back the normalised data when it failed. */
export interface Checked {
  data: unknown;
  errors: FieldError[];
}

/**
 * @internal Like `compile`, but the checker also hands back the normalised data when the body
 * is invalid, so callers can add rules a schema cannot express and report all errors together.
 */
export function checker(schema: object, options: CompileOptions = {}): (data: unknown) => Checked {
  const firstError = validatorOf(firstErrorAjv, compiledFirstError, schema);
  const allErrors = validatorOf(ajv, compiled, schema);
  return (data: unknown): Checked => {
    const prepared = options.normalise === false ? data : prepare(data, schema);
    if (firstError(prepared)) return { data: prepared, errors: [] };
    // Every violation among the reported items; if those are all fine, the one found beyond them.
    const errors = allErrors(reported(prepared, schema)) ? firstError.errors : allErrors.errors;
    return { data: prepared, errors: toFieldErrors(errors ?? []) };
  };
}

function validatorOf(instance: Ajv, cache: WeakMap<object, ValidateFunction>, schema: object): ValidateFunction {
  let fn = cache.get(schema);
  if (fn === undefined) {
    fn = instance.compile(schema);
    cache.set(schema, fn);
  }
  return fn;
}

/**
 * Compiles a schema once and returns a validator. `allErrors`, strict types (no coercion);
 * the custom keywords `maxBytes` and `noControlCharacters` and the offset-requiring `date-time`
 * format are available. On success `value` is the normalised copy (see CompileOptions).
 */
export function compile<T>(schema: object, options: CompileOptions = {}): Validator<T> {
  const check = checker(schema, options);
  return (data: unknown): Validation<T> => {
    const { data: value, errors } = check(data);
    return errors.length === 0 ? { ok: true, value: value as T } : { ok: false, errors };
  };
}
