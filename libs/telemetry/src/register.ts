/**
 * `node --import @po/telemetry/register app.js`: tracing from the OTEL_* variables for a process
 * that is not one of our services, e.g. an SDK worker (the worker SDK then creates its handler
 * spans through @opentelemetry/api). The service name is OTEL_SERVICE_NAME, else "worker".
 * Spans are flushed when the process runs out of work or gets SIGTERM/SIGINT handled elsewhere.
 */
import { shutdownTracing, startTracing } from './tracing.js';

if (await startTracing({ serviceName: 'worker' })) {
  process.once('beforeExit', () => void shutdownTracing());
}
