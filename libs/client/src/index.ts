export { createClient, type ClientOptions, type PageQuery, type PoClient } from './client.js';
export {
  ConnectionError,
  ProblemError,
  UNEXPECTED_RESPONSE,
  toProblemError,
  type FieldError,
  type ProblemDetails,
} from './errors.js';
export { paginate, type Page, type Paged } from './paging.js';
export {
  DEFAULT_RETRY,
  isRepeatable,
  parseRetryAfter,
  retryDelay,
  withRetries,
  type FetchLike,
  type RetryOptions,
  type Sleep,
} from './retry.js';
export type { components, operations, paths } from './generated/openapi.js';
export * from './types.js';
