import { conditionalGet, createHttpApp, healthRouter, type ApiKeyResolver, type ReadinessCheck } from '@po/http';
import type { ApiGatewayConfig } from './config.js';
import type { Deps } from './deps.js';
import { handlerRoutes } from './http/handlers/routes.js';
import { operationRoutes } from './http/operations/routes.js';
import { webhookRoutes } from './http/webhooks/routes.js';
import { pipelineRoutes } from './http/pipelines/routes.js';
import { scheduleRoutes } from './http/schedules/routes.js';
import { stageRoutes } from './http/stages/routes.js';
import { systemRoutes } from './http/system/routes.js';
import { workerActivityRoutes } from './http/workers/routes.js';
import { openApiRoutes } from './http/openapi/routes.js';
import { dashboardApiRoutes } from './http/dashboard/routes.js';
import { dashboardStatic } from './http/dashboard/static.js';

/** Where the dashboard's build is (null: not installed); main.ts resolves it, tests pass their own. */
export interface DashboardFiles {
  distDir: string | null;
}

export function buildApp(
  deps: Deps,
  config: Pick<ApiGatewayConfig, 'maxBodyBytes' | 'build' | 'logsAnonLimit' | 'dashboard'>,
  readiness: Record<string, ReadinessCheck>,
  dashboard: DashboardFiles = { distDir: null },
) {
  const resolveKey: ApiKeyResolver = (hash) => deps.keys.resolve(hash, deps.clock());
  return createHttpApp({
    logger: deps.logger,
    middleware: [
      conditionalGet(),
      dashboardStatic({ distDir: dashboard.distDir, config: { traceUrlTemplate: config.dashboard.traceUrlTemplate, version: config.build.version } }),
    ],
    routers: [
      // Its writes announce through Redis but stand without it (the sweep catches up), and its
      // reads need PostgreSQL only: a Redis outage leaves it ready, reported degraded (decision 0120).
      healthRouter(readiness, { degradable: ['redis'] }),
      pipelineRoutes(deps, resolveKey, config.maxBodyBytes),
      stageRoutes(deps, resolveKey, config.maxBodyBytes),
      scheduleRoutes(deps, resolveKey, config.maxBodyBytes),
      handlerRoutes(deps, resolveKey, config.maxBodyBytes),
      operationRoutes(deps, resolveKey, config.maxBodyBytes),
      webhookRoutes(deps, resolveKey, config.maxBodyBytes),
      systemRoutes(deps, config.build, config.maxBodyBytes, config.logsAnonLimit),
      workerActivityRoutes(deps, resolveKey),
      dashboardApiRoutes(deps, resolveKey),
      openApiRoutes(),
    ],
  });
}
