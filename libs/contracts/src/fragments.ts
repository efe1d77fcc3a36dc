// Small builders for the JSON Schemas of this package. Every named schema gets an `$id`
// (`urn:pipeline-orchestration:schema:{Name}`) and a `title` so an OpenAPI document can be
// generated from them; references between named schemas use `$ref` to that `$id`.
import { UTC_DATE_TIME_PATTERN } from './datetime.js';
import type { JsonSchema } from './validate.js';

export type { JsonSchema } from './validate.js';

/** Largest id the API accepts: 2^53 - 1 (addendum §1). */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
/** Upper bound of integer fields for which the spec states none (decision 0003). */
export const MAX_INT32 = 2_147_483_647;

const ID_PREFIX = 'urn:pipeline-orchestration:schema:';

/** The `$id` of a named schema. */
export function schemaId(name: string): string {
  return `${ID_PREFIX}${name}`;
}

export function ref(name: string): JsonSchema {
  return { $ref: schemaId(name) };
}

interface StringRules {
  minLength?: number;
  maxLength?: number;
  maxBytes?: number;
  noControlCharacters?: boolean;
  description?: string;
}

export function str(rules: StringRules = {}): JsonSchema {
  return { type: 'string', ...rules };
}

/** An integer in `min..max`; the default max is 2^31 - 1. */
export function int(min?: number, max: number = MAX_INT32, description?: string): JsonSchema {
  return {
    type: 'integer',
    ...(min === undefined ? {} : { minimum: min }),
    maximum: max,
    ...(description === undefined ? {} : { description }),
  };
}

/** An id: integer 1..2^53-1. */
export function id(description?: string): JsonSchema {
  return int(1, MAX_ID, description);
}

export function bool(description?: string): JsonSchema {
  return description === undefined ? { type: 'boolean' } : { type: 'boolean', description };
}

export function enumOf(values: readonly string[], description?: string): JsonSchema {
  return {
    type: 'string',
    enum: [...values],
    ...(description === undefined ? {} : { description }),
  };
}

/** A request date-time: RFC 3339 with an offset. */
export function dateTime(description?: string): JsonSchema {
  return {
    type: 'string',
    format: 'date-time',
    ...(description === undefined ? {} : { description }),
  };
}

/** A response date-time: UTC with exactly three fractional digits and `Z`. */
export function utcDateTime(): JsonSchema {
  return { type: 'string', format: 'date-time', pattern: UTC_DATE_TIME_PATTERN };
}

/** Adds `null` to the type (and to the enum, if any) of a scalar schema. */
export function nullable(schema: JsonSchema): JsonSchema {
  const type = schema.type;
  if (typeof type !== 'string') throw new Error('nullable() needs a schema with a single type');
  const values = schema.enum;
  return {
    ...schema,
    type: [type, 'null'],
    ...(Array.isArray(values) ? { enum: [...(values as unknown[]), null] } : {}),
  };
}

export function arrayOf(
  items: JsonSchema,
  limits: { minItems?: number; maxItems?: number } = {},
): JsonSchema {
  return { type: 'array', items, ...limits };
}

/** A free-form object: any members, never normalised; optionally limited in serialized bytes. */
export function freeObject(maxBytes?: number, description?: string): JsonSchema {
  return {
    type: 'object',
    ...(maxBytes === undefined ? {} : { maxBytes }),
    ...(description === undefined ? {} : { description }),
  };
}

interface ObjectOptions {
  required?: readonly string[];
  /** Response bodies are closed: an undeclared member is an error. */
  closed?: boolean;
  description?: string;
}

/** A named object schema with `$id` and `title`. */
export function named(
  name: string,
  properties: Record<string, JsonSchema>,
  options: ObjectOptions = {},
): JsonSchema {
  return {
    $id: schemaId(name),
    title: name,
    ...(options.description === undefined ? {} : { description: options.description }),
    type: 'object',
    required: [...(options.required ?? [])],
    properties,
    ...(options.closed === true ? { additionalProperties: false } : {}),
  };
}

/** A response object: closed, and every listed field required (addendum §1). */
export function response(
  name: string,
  properties: Record<string, JsonSchema>,
  description?: string,
): JsonSchema {
  return named(name, properties, {
    required: Object.keys(properties),
    closed: true,
    ...(description === undefined ? {} : { description }),
  });
}
