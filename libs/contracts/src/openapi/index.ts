// The OpenAPI 3.1 document of the whole external API (api-gateway and worker-gateway), generated
// from the registered ajv schemas, so the document and the validators share one source of truth
// (issue item 6; decision 0041). The operations (paths, credentials, statuses) are listed in
// operations/ from api-spec.md and the addendum; every body schema comes from `registeredSchemas()`.
export { buildOpenApiDocument, JSON_SCHEMA_DIALECT } from './document.js';
export { toOpenApiSchema } from './schemas.js';
export type {
  HttpMethod,
  OpenApiDocument,
  OpenApiMediaType,
  OpenApiOperation,
  OpenApiPathItem,
  OpenApiReference,
  OpenApiResponse,
  ServiceName,
} from './types.js';
