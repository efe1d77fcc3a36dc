import { createHttpApp, healthRouter, type ApiKeyResolver, type ReadinessCheck } from '@po/http';
import type { ApiGatewayConfig } from './config.js';
import type { Deps } from './deps.js';
import { pipelineRoutes } from './http/pipelines/routes.js';
import { scheduleRoutes } from './http/schedules/routes.js';
import { stageRoutes } from './http/stages/routes.js';
import { systemRoutes } from './http/system/routes.js';
import { workerActivityRoutes } from './http/workers/routes.js';
import { openApiRoutes } from './http/openapi/routes.js';

export function buildApp(deps: Deps, config: Pick<ApiGatewayConfig, 'maxBodyBytes' | 'build' | 'logsAnonLimit'>, readiness: Record<string, ReadinessCheck>) {
  const resolveKey: ApiKeyResolver = (hash) => deps.keys.resolve(hash, deps.clock());
  return createHttpApp({
    logger: deps.logger,
    routers: [
      healthRouter(readiness),
      pipelineRoutes(deps, resolveKey, config.maxBodyBytes),
      stageRoutes(deps, resolveKey, config.maxBodyBytes),
      scheduleRoutes(deps, resolveKey, config.maxBodyBytes),
      systemRoutes(deps, config.build, config.maxBodyBytes, config.logsAnonLimit),
      workerActivityRoutes(deps, resolveKey),
      openApiRoutes(),
    ],
  });
}
