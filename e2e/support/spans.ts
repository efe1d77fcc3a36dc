import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One span line of the file exporter (libs/telemetry/src/file-exporter.ts, OTEL_TRACES_EXPORTER=file). */
export interface SpanLine {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: string;
  service: string;
  start: string;
  durationMs: number;
  status: string;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

/** Span files of every process, by file name (`{service}-{pid}.jsonl`). */
export function readSpanFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of readdirSync(dir)) if (name.endsWith('.jsonl')) files.set(name, readFileSync(join(dir, name), 'utf8'));
  return files;
}

export function readSpans(dir: string): SpanLine[] {
  return [...readSpanFiles(dir).values()].flatMap((text) =>
    text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as SpanLine),
  );
}

/** The env that makes a process export its spans to `{dir}/{service}-{pid}.jsonl` quickly. */
export function fileExporterEnv(dir: string): Record<string, string> {
  return {
    OTEL_TRACES_EXPORTER: 'file',
    OTEL_FILE_EXPORTER_PATH: join(dir, '{service}-{pid}.jsonl'),
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}
