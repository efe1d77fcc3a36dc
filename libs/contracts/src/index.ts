// @po/contracts: JSON Schemas, TypeScript types and validators for every request and response
// body of the API (api-spec.md + addendum), plus path/query parameter parsers.
export {
  compile,
  dedupeErrors,
  escapePointerToken,
  registerSchemas,
  registeredSchemas,
  toFieldErrors,
  utf8Bytes,
} from './validate.js';
export type { CompileOptions, FieldError, JsonSchema, Validation, Validator } from './validate.js';
export { schemaId } from './fragments.js';
export {
  formatDateTime,
  formatNullableDateTime,
  isRfc3339DateTime,
  normaliseDateTime,
  toUtcMillis,
  UTC_DATE_TIME_PATTERN,
} from './datetime.js';
export type { JsonObject, JsonPrimitive, JsonValue, NonNullJsonValue } from './json.js';
export { bodyLimits, limits } from './limits.js';
export * from './pipelines.js';
export * from './pipeline-responses.js';
export * from './pipeline-search.js';
export * from './schedules.js';
export * from './schedule-backfill.js';
export * from './handlers.js';
export * from './reruns.js';
export * from './operations.js';
export * from './workers.js';
export * from './worker-validators.js';
export * from './worker-queues.js';
export * from './system.js';
export * from './problem.js';
export * from './params.js';
export * from './worker-activity.js';
export * from './dashboard.js';
export * from './openapi/index.js';
export * from './webhooks.js';
