/**
 * A strict reader of the Prometheus text exposition format (0.0.4): every line must be a
 * `# HELP`, `# TYPE` or comment line, or a sample `name{label="value",...} value [timestamp]`, and
 * every sample's family must have been declared by a `# TYPE` line. Throws on anything else, so a
 * test that parses GET /metrics proves the format too.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(raw: string, line: string): number {
  if (raw === '+Inf') return Infinity;
  if (raw === '-Inf') return -Infinity;
  if (raw === 'NaN') return NaN;
  const value = Number(raw);
  if (!Number.isFinite(value) || !/^-?[\d.]+(e[+-]?\d+)?$/i.test(raw)) throw new Error(`bad sample value in: ${line}`);
  return value;
}

function parseLabels(raw: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < raw.length) {
    const match = LABEL.exec(raw);
    if (!match) throw new Error(`bad labels in: ${line}`);
    const [, name, value] = match;
    labels[name!] = value!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return labels;
}

/** The family a sample belongs to (histogram and summary samples carry suffixes). */
function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      if (types.get(base) === 'histogram' || types.get(base) === 'summary') return base;
    }
  }
  return undefined;
}

export function parsePrometheusText(text: string): Sample[] {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const parts = line.split(/\s+/);
      if (parts[1] === 'TYPE') {
        if (!NAME.test(parts[2] ?? '') || !TYPES.has(parts[3] ?? '')) throw new Error(`bad TYPE line: ${line}`);
        if (types.has(parts[2]!)) throw new Error(`TYPE declared twice: ${line}`);
        types.set(parts[2]!, parts[3]!);
      } else if (parts[1] === 'HELP' && !NAME.test(parts[2] ?? '')) {
        throw new Error(`bad HELP line: ${line}`);
      }
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name, , labels, value] = match;
    if (familyOf(name!, types) === undefined) throw new Error(`sample of an undeclared family: ${line}`);
    samples.push({ name: name!, labels: labels ? parseLabels(labels, line) : {}, value: parseValue(value!, line) });
  }
  return samples;
}

/** Sum of the samples named `name` whose labels include `labels`; 0 when there is none. */
export function metricValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** True when at least one sample named `name` (with these labels) is there. */
export function hasMetric(samples: Sample[], name: string, labels: Record<string, string> = {}): boolean {
  return samples.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** GET /metrics of a service, checked: 200, the Prometheus content type, and a parseable body. */
export async function scrape(baseUrl: string): Promise<Sample[]> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`GET ${baseUrl}/metrics answered ${res.status}`);
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('text/plain') || !type.includes('version=0.0.4')) throw new Error(`unexpected content type ${type}`);
  return parsePrometheusText(await res.text());
}
