/** A JSON value of the document (schemas and extensions). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonMap = { [key: string]: Json };

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** Which service serves an operation (vendor extension `x-service`). */
export type ServiceName = 'api-gateway' | 'worker-gateway';

export interface OpenApiReference {
  $ref: string;
  description?: string;
}

export interface OpenApiMediaType {
  schema: JsonMap;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, OpenApiReference>;
  content?: Record<string, OpenApiMediaType>;
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  'x-service': ServiceName;
  /** `[]`: no header credential. Several schemes in one object: all of them are required. */
  security: Record<string, string[]>[];
  parameters?: OpenApiReference[];
  requestBody?: {
    required: boolean;
    description?: string;
    content: Record<string, OpenApiMediaType>;
  };
  responses: Record<string, OpenApiResponse | OpenApiReference>;
}

export type OpenApiPathItem = Partial<Record<HttpMethod, OpenApiOperation>>;

export interface OpenApiDocument {
  openapi: '3.1.0';
  jsonSchemaDialect: string;
  info: {
    title: string;
    version: string;
    description: string;
    /** SPDX: `identifier` and `url` are mutually exclusive in OpenAPI 3.1. */
    license: { name: string; identifier: string };
  };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, OpenApiPathItem>;
  components: {
    schemas: Record<string, JsonMap>;
    securitySchemes: Record<
      string,
      { type: 'apiKey'; in: 'header'; name: string; description: string }
    >;
    parameters: Record<
      string,
      {
        name: string;
        in: 'path' | 'query';
        required: boolean;
        description: string;
        schema: JsonMap;
      }
    >;
    headers: Record<string, { description: string; schema: JsonMap }>;
    responses: Record<string, OpenApiResponse>;
  };
}
