// The operations of docs/openapi.json, with the gateway the chart's Ingress sends each concrete
// path to (deploy/local/nginx.mjs WORKER_LOCATIONS mirrors its regex locations).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../deploy/local/stack.mjs';
import { WORKER_LOCATIONS } from '../../deploy/local/nginx.mjs';

export const OPENAPI_FILE = join(ROOT, 'docs', 'openapi.json');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const workerLocations = WORKER_LOCATIONS.map((re) => new RegExp(re));

/** 'api' or 'worker': where the Ingress sends this request path (query string ignored). */
export function gatewayFor(path) {
  const bare = path.split('?')[0];
  return workerLocations.some((re) => re.test(bare)) ? 'worker' : 'api';
}

/** Follows `$ref`s (#/components/...) until a schema without one. */
export function resolver(doc) {
  return function resolve(schema) {
    let s = schema;
    for (let hops = 0; s && s.$ref; hops++) {
      if (hops > 32) throw new Error(`$ref loop at ${schema.$ref}`);
      const parts = s.$ref.replace(/^#\//, '').split('/');
      s = parts.reduce((node, key) => node?.[key], doc);
      if (!s) throw new Error(`unresolved $ref ${schema.$ref}`);
    }
    return s;
  };
}

/**
 * Every operation: { key, method, template, operationId, service (x-service), security
 * (['ApiKey'], ['WorkerSession'], both, or [] when anonymous), pathParams, queryParams,
 * bodySchema (resolved, or null), bodyRequired }.
 */
export function loadOperations(file = OPENAPI_FILE) {
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  const resolve = resolver(doc);
  const ops = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = (op.parameters ?? []).map(resolve);
      const security = op.security ?? doc.security ?? [];
      const schemes = [...new Set(security.flatMap((req) => Object.keys(req)))];
      const content = op.requestBody?.content?.['application/json'];
      ops.push({
        key: `${method.toUpperCase()} ${template}`,
        method: method.toUpperCase(),
        template,
        operationId: op.operationId,
        service: op['x-service'],
        security: schemes,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        bodySchema: content?.schema ? resolve(content.schema) : null,
        bodyRequired: Boolean(op.requestBody?.required),
      });
    }
  }
  return { doc, resolve, ops };
}
