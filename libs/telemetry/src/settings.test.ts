import { describe, expect, it } from 'vitest';
import { ConfigError } from '@po/config';
import { tracingSettings } from './settings.js';

describe('tracing settings from OTEL_* (decision 0050)', () => {
  it('are off when nothing asks for an exporter', () => {
    expect(tracingSettings({})).toEqual({ enabled: false });
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toEqual({ enabled: false });
  });

  it('turn on OTLP when an OTLP endpoint is set', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toMatchObject({ enabled: true, exporters: ['otlp'] });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toMatchObject({ enabled: true, exporters: ['otlp'] });
  });

  it('follow OTEL_TRACES_EXPORTER, where none means off even with an endpoint', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({ enabled: false });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'console' })).toMatchObject({ enabled: true, exporters: ['console'] });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp, file', OTEL_FILE_EXPORTER_PATH: '/tmp/s.jsonl' })).toMatchObject({
      exporters: ['otlp', 'file'],
      filePath: '/tmp/s.jsonl',
    });
  });

  it('are off when OTEL_SDK_DISABLED=true', () => {
    expect(tracingSettings({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({ enabled: false });
  });

  it('read the service name and the sampler', () => {
    expect(
      tracingSettings({ OTEL_TRACES_EXPORTER: 'console', OTEL_SERVICE_NAME: 'gw-eu', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }),
    ).toEqual({ enabled: true, exporters: ['console'], serviceName: 'gw-eu', filePath: undefined, sampler: 'parentbased_traceidratio', ratio: 0.25 });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'console' })).toMatchObject({ sampler: 'parentbased_always_on', ratio: 1 });
  });

  it('list every problem at once', () => {
    const read = () =>
      tracingSettings({
        OTEL_TRACES_EXPORTER: 'file,zipkin',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      });
    expect(read).toThrow(ConfigError);
    try {
      read();
    } catch (err) {
      expect((err as ConfigError).problems).toEqual([
        'OTEL_TRACES_EXPORTER must list otlp, file, console or none, got "zipkin"',
        'OTEL_TRACES_EXPORTER=file needs OTEL_FILE_EXPORTER_PATH (a JSON-lines file; {service} and {pid} are replaced)',
        'OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "sometimes"',
      ]);
    }
    expect(() => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/only OTLP over HTTP/);
    expect(() => tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/from 0 to 1/);
  });
});
