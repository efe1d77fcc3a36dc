// Conversions from the ajv schemas to the document (JSON Schema 2020-12 dialect):
// - `$id` is dropped, and a `$ref` to `urn:pipeline-orchestration:schema:{Name}` becomes
//   `#/components/schemas/{Name}` (a component keeping its `$id` would rebase those refs).
// - The custom keyword `maxBytes` becomes `x-max-bytes` (same number: UTF-8 bytes of a string, or
//   of the compact JSON of another value); `noControlCharacters` becomes
//   `x-no-control-characters`. Both are also said in the description, since generic validators
//   ignore `x-` keywords.
import { schemaId } from '../fragments.js';
// Every module that registers schemas, so the document is complete whatever was imported first.
import '../dashboard.js';
import '../handlers.js';
import '../operations.js';
import '../pipelines.js';
import '../pipeline-responses.js';
import '../pipeline-search.js';
import '../problem.js';
import '../schedules.js';
import '../system.js';
import '../worker-activity.js';
import '../workers.js';
import { registeredSchemas } from '../validate.js';
import type { JsonSchema } from '../validate.js';
import type { Json, JsonMap } from './types.js';

const SCHEMA_ID_PREFIX = schemaId('');

/** The component name of a registered schema `$id`. */
function componentName(id: string): string {
  if (!id.startsWith(SCHEMA_ID_PREFIX)) throw new Error(`not a schema id of this package: ${id}`);
  return id.slice(SCHEMA_ID_PREFIX.length);
}

export function componentRef(name: string): string {
  return `#/components/schemas/${name}`;
}

/** Keywords whose value is a map of subschemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']);
/** Keywords whose value is one subschema. */
const SCHEMA_ONE = new Set([
  'items',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
]);
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A plain JSON copy of a value (schemas are frozen; the document must be mutable and JSON). */
function json(value: unknown): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

function withSentence(description: unknown, sentence: string): string {
  return typeof description === 'string' && description !== ''
    ? `${description}. ${sentence}`
    : sentence;
}

/** One ajv schema as a 2020-12 schema of the document (see the conversions at the top). */
export function toOpenApiSchema(schema: JsonSchema): JsonMap {
  const out: JsonMap = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$id') continue;
    if (key === '$ref' && typeof value === 'string') {
      out.$ref = componentRef(componentName(value));
    } else if (key === 'maxBytes' && typeof value === 'number') {
      out['x-max-bytes'] = value;
      const described = typeof schema.description === 'string' && /bytes/.test(schema.description);
      if (!described) notes.push(`At most ${value} UTF-8 bytes`);
    } else if (key === 'noControlCharacters' && typeof value === 'boolean') {
      out['x-no-control-characters'] = value;
      if (value) notes.push('No control characters (Unicode category Cc)');
    } else if (SCHEMA_MAPS.has(key) && isMap(value)) {
      const map: JsonMap = {};
      for (const [name, sub] of Object.entries(value))
        map[name] = toOpenApiSchema(sub as JsonSchema);
      out[key] = map;
    } else if (SCHEMA_ONE.has(key) && isMap(value)) {
      out[key] = toOpenApiSchema(value);
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key] = value.map((sub) => toOpenApiSchema(sub as JsonSchema));
    } else {
      out[key] = json(value);
    }
  }
  if (notes.length > 0) out.description = withSentence(out.description, `${notes.join('. ')}.`);
  return out;
}

/** components.schemas: every registered schema, by name, sorted (stable output). */
export function componentSchemas(): Record<string, JsonMap> {
  const entries = registeredSchemas().map((schema): [string, JsonMap] => [
    componentName(String(schema.$id)),
    toOpenApiSchema(schema),
  ]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}
