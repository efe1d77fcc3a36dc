import { createRouter, type Router } from '@po/http';
import { buildOpenApiDocument } from '@po/contracts';

/**
 * GET /openapi.json (no credentials): the OpenAPI 3.1 document of the whole API, generated from
 * the schemas of @po/contracts (decision 0041). Built once, when the router is created.
 */
export function openApiRoutes(): Router {
  const router = createRouter();
  const body = JSON.stringify(buildOpenApiDocument());
  router.get('/openapi.json', (ctx) => {
    ctx.status = 200;
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = body;
  });
  return router;
}
