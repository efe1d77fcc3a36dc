import { createHttpApp, healthRouter, type ApiKeyResolver, type ReadinessCheck } from '@po/http';
import type { Deliveries } from './deliveries/deliveries.js';
import type { Deps } from './deps.js';
import { jobRoutes } from './http/jobs/routes.js';
import { stageRoutes } from './http/stages/routes.js';
import { workerRoutes } from './http/workers/routes.js';

export function buildApp(deps: Deps, deliveries: Deliveries, readiness: Record<string, ReadinessCheck>) {
  const resolveKey: ApiKeyResolver = (hash) => deps.keys.resolve(hash, deps.clock());
  return createHttpApp({
    logger: deps.logger,
    routers: [
      // Sessions, leases and heartbeats need PostgreSQL only: a Redis outage must not take them out
      // of the Service with the pull and the result (decision 0120).
      healthRouter(readiness, { degradable: ['redis'] }),
      workerRoutes(deps, resolveKey),
      jobRoutes(deps, deliveries, resolveKey),
      stageRoutes(deps, deliveries, resolveKey),
    ],
  });
}
