import { createHttpApp, healthRouter, type ReadinessCheck } from '@po/http';
import type { Logger } from '@po/telemetry';

/** Health endpoints only, until this service's own issue lands. */
export function buildApp(logger: Logger, readiness: Record<string, ReadinessCheck>) {
  return createHttpApp({ logger, routers: [healthRouter(readiness)] });
}
