import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { startTracing, tracingEnabled } from './tracing.js';

describe('tracing without an exporter (the local default)', () => {
  it('registers nothing: the API keeps its no-op tracer and nothing records', async () => {
    expect(await startTracing({ serviceName: 'unit', env: { OTEL_SERVICE_NAME: 'x' } })).toBe(false);
    expect(tracingEnabled()).toBe(false);
    const provider = trace.getTracerProvider() as unknown as { getDelegate(): object };
    expect(provider.getDelegate().constructor.name).toBe('NoopTracerProvider');
    expect(trace.getTracer('x').startSpan('y').isRecording()).toBe(false);
  });
});
