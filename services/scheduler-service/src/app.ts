import { createHttpApp, healthRouter, type ReadinessCheck } from '@po/http';
import type { Logger } from '@po/telemetry';

/** scheduler-service has no public API: only health endpoints. */
export function buildApp(logger: Logger, readiness: Record<string, ReadinessCheck>) {
  return createHttpApp({ logger, routers: [healthRouter(readiness)] });
}
