import { appendFile, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SpanKind, SpanStatusCode, type HrTime } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** One exported span as a JSON line (OTEL_TRACES_EXPORTER=file): for tests and benchmarks. */
export interface SpanLine {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: string;
  service: string;
  start: string;
  durationMs: number;
  status: 'UNSET' | 'OK' | 'ERROR';
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

const hrToMs = (t: HrTime): number => t[0] * 1000 + t[1] / 1e6;

/** `{service}` and `{pid}` in OTEL_FILE_EXPORTER_PATH make one file per process. */
export function spanFilePath(template: string, service: string): string {
  return template.replaceAll('{service}', service).replaceAll('{pid}', String(process.pid));
}

/**
 * A span exporter of our own that appends JSON lines to a file (one write per batch, O_APPEND).
 * Not an OTel standard exporter: the e2e tests and `BENCH_TRACING=1` read what every process
 * exported without running a collector.
 */
export class JsonLinesFileExporter implements SpanExporter {
  private pending = 0;
  private stopped = false;
  private drained: (() => void)[] = [];

  constructor(
    private readonly path: string,
    private readonly service: string,
  ) {
    mkdirSync(dirname(path), { recursive: true });
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.stopped) return resultCallback({ code: ExportResultCode.FAILED, error: new Error('exporter shut down') });
    const text = spans.map((s) => JSON.stringify(this.line(s))).join('\n') + '\n';
    this.pending += 1;
    appendFile(this.path, text, (err) => {
      this.pending -= 1;
      if (this.pending === 0) for (const resolve of this.drained.splice(0)) resolve();
      resultCallback(err ? { code: ExportResultCode.FAILED, error: err } : { code: ExportResultCode.SUCCESS });
    });
  }

  private line(span: ReadableSpan): SpanLine {
    const context = span.spanContext();
    return {
      traceId: context.traceId,
      spanId: context.spanId,
      parentSpanId: span.parentSpanContext?.spanId ?? null,
      name: span.name,
      kind: SpanKind[span.kind],
      service: String(span.resource.attributes['service.name'] ?? this.service),
      start: new Date(hrToMs(span.startTime)).toISOString(),
      durationMs: Math.round(hrToMs(span.duration) * 1000) / 1000,
      status: span.status.code === SpanStatusCode.ERROR ? 'ERROR' : span.status.code === SpanStatusCode.OK ? 'OK' : 'UNSET',
      attributes: { ...span.attributes },
      links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    };
  }

  forceFlush(): Promise<void> {
    return this.pending === 0 ? Promise.resolve() : new Promise((resolve) => this.drained.push(resolve));
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.stopped = true;
  }
}
