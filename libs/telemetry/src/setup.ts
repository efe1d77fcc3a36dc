import { ConfigError } from '@po/config';
import { enableProcessMetrics } from './metrics.js';
import { startTracing } from './tracing.js';

/**
 * What each service's `src/instrument.ts` runs before anything else (decision 0050): tracing from
 * the OTEL_* variables (off unless an exporter is configured) and the Node.js process metrics.
 * Invalid OTEL_* settings are listed on stderr and the process exits 1, like any other config.
 */
export async function startTelemetry(serviceName: string): Promise<void> {
  try {
    await startTracing({ serviceName });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  enableProcessMetrics();
}
