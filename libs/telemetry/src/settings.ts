import { ConfigError } from '@po/config';

type Env = Record<string, string | undefined>;

export const TRACE_EXPORTERS = ['otlp', 'file', 'console'] as const;
export type TraceExporterName = (typeof TRACE_EXPORTERS)[number];

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export type TracingSettings =
  | { enabled: false }
  | {
      enabled: true;
      exporters: TraceExporterName[];
      /** OTEL_SERVICE_NAME, which wins over the service's own name. */
      serviceName: string | undefined;
      /** OTEL_FILE_EXPORTER_PATH; `{service}` and `{pid}` are replaced. */
      filePath: string | undefined;
      sampler: SamplerName;
      /** OTEL_TRACES_SAMPLER_ARG for the ratio samplers. */
      ratio: number;
    };

const value = (env: Env, name: string): string | undefined => {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
};

/**
 * Tracing from the standard OTEL_* variables (decision 0050). Off unless an exporter is asked for:
 * OTEL_TRACES_EXPORTER (otlp, file, console, or none), or, when that is unset, an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT). OTEL_SDK_DISABLED=true wins.
 * Throws ConfigError listing every problem.
 */
export function tracingSettings(env: Env = process.env): TracingSettings {
  const problems: string[] = [];
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return { enabled: false };

  let exporters: TraceExporterName[];
  const listed = value(env, 'OTEL_TRACES_EXPORTER');
  if (listed !== undefined) {
    const names = [...new Set(listed.toLowerCase().split(',').map((n) => n.trim()).filter(Boolean))];
    const unknown = names.filter((n) => n !== 'none' && !(TRACE_EXPORTERS as readonly string[]).includes(n));
    if (unknown.length > 0) problems.push(`OTEL_TRACES_EXPORTER must list otlp, file, console or none, got "${unknown.join(',')}"`);
    exporters = names.filter((n): n is TraceExporterName => (TRACE_EXPORTERS as readonly string[]).includes(n));
  } else {
    const endpoint = value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    exporters = endpoint === undefined ? [] : ['otlp'];
  }

  const filePath = value(env, 'OTEL_FILE_EXPORTER_PATH');
  if (exporters.includes('file') && filePath === undefined) {
    problems.push('OTEL_TRACES_EXPORTER=file needs OTEL_FILE_EXPORTER_PATH (a JSON-lines file; {service} and {pid} are replaced)');
  }
  const protocol = value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (exporters.includes('otlp') && protocol !== undefined && !['http/json', 'http/protobuf'].includes(protocol)) {
    problems.push(`OTEL_EXPORTER_OTLP_PROTOCOL: only OTLP over HTTP is supported (http/json; http/protobuf is accepted and sent as JSON), got "${protocol}"`);
  }

  const sampler = (value(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got "${sampler}"`);
  let ratio = 1;
  const arg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (arg !== undefined && sampler.endsWith('traceidratio')) {
    ratio = Number(arg);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
      problems.push(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${arg}"`);
      ratio = 1;
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  if (exporters.length === 0) return { enabled: false };
  return { enabled: true, exporters, serviceName: value(env, 'OTEL_SERVICE_NAME'), filePath, sampler, ratio };
}
