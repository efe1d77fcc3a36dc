// Imported first by main.ts: ESM evaluates imports in order, so telemetry is set up before any
// other module of the service runs (decision 0050). Tracing stays off unless OTEL_* asks for it.
import { startTelemetry } from '@po/telemetry';

await startTelemetry('api-gateway');
