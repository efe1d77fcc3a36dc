// Reading what the user typed: ids, durations and times, and definition files in JSON or YAML.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { UsageError } from './errors.js';

/** commander argument parser: an id (pipeline, stage) is a positive integer. */
export function positiveInt(value: string): number {
  if (!/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError('must be a positive integer');
  }
  return Number(value);
}

/**
 * commander option parser for a limit that `none` clears: a positive integer, or `'none'`
 * (commander turns a parsed null into '', so the word is kept and `noneAsNull` maps it).
 */
export function countOrNone(value: string): number | 'none' {
  return value === 'none' ? value : positiveInt(value);
}

/** commander option parser for a rate that `none` clears: a number above 0, or `'none'`. */
export function rateOrNone(value: string): number | 'none' {
  if (value === 'none') return value;
  const n = Number(value);
  if (!/^\d*\.?\d+$/.test(value) || !(n > 0))
    throw new InvalidArgumentError('must be a number above 0, or none');
  return n;
}

/** What `countOrNone` or `rateOrNone` gave, as a request says it: `none` is null. */
export function noneAsNull<T>(value: T | 'none'): T | null {
  return value === 'none' ? null : value;
}

/** commander option parser for page sizes and counts. */
export function limitValue(value: string): number {
  return positiveInt(value);
}

/** commander option parser that collects a repeated option; commas separate values too. */
export function collect(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  ];
}

/** commander option parser for `--keyword`: repeatable, KEY or KEY=VALUE, never split on commas. */
export function collectRaw(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** `90s`, `15m`, `24h`, `7d`, `1h30m`, `500ms` → milliseconds; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!/^(\d+(ms|s|m|h|d|w))+$/.test(t)) return undefined;
  let total = 0;
  for (const [, n, unit] of t.matchAll(/(\d+)(ms|s|m|h|d|w)/g))
    total += Number(n) * UNIT_MS[unit!]!;
  return total;
}

/** commander option parser for durations (`--interval 2s`). */
export function durationValue(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0)
    throw new InvalidArgumentError('must be a duration such as 500ms, 30s, 15m, 24h or 7d');
  return ms;
}

/**
 * A moment for a filter: a duration back from `now` (`24h` = 24 hours ago) or an RFC 3339
 * date-time with an offset. Returned as the API writes times.
 */
export function parseMoment(value: string, now: Date): string {
  const ms = parseDuration(value);
  if (ms !== undefined) return new Date(now.getTime() - ms).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value.trim())) {
    const at = new Date(value.trim());
    if (!Number.isNaN(at.getTime())) return at.toISOString();
  }
  throw new UsageError(
    `"${value}" is neither a duration (24h, 7d, 90m) nor a date-time with an offset (2025-03-01T00:00:00Z)`,
  );
}

/** A JSON or YAML file (`-` reads stdin) that must hold one object. JSON is chosen by the .json extension. */
export async function readObjectFile(
  path: string,
  read: (path: string) => string = defaultRead,
): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    throw new UsageError(`cannot read ${path === '-' ? 'stdin' : path}: ${(err as Error).message}`);
  }
  const isJson = /\.json$/i.test(path);
  let value: unknown;
  try {
    // yaml is loaded only by the commands that read a file: every other command starts faster.
    value = isJson ? JSON.parse(text) : (await import('yaml')).parse(text);
  } catch (err) {
    throw new UsageError(
      `${path} is not valid ${isJson ? 'JSON' : 'YAML or JSON'}: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(
      `${path} must hold one object (a mapping), not ${Array.isArray(value) ? 'a list' : value === null ? 'nothing' : typeof value}`,
    );
  }
  return value as Record<string, unknown>;
}

function defaultRead(path: string): string {
  return readFileSync(path === '-' ? 0 : path, 'utf8');
}

/**
 * A stage `input` must be a string on creation (api-spec.md); in a YAML file an object is more
 * natural, so any other non-null value is sent as compact JSON, as the append endpoint does.
 * Returns a copy; anything that is not a stage list is left for the API to judge.
 */
export function stringifyStageInputs<T extends Record<string, unknown>>(definition: T): T {
  const stages = definition.stages;
  if (!Array.isArray(stages)) return definition;
  return {
    ...definition,
    stages: stages.map((stage: unknown) => {
      if (typeof stage !== 'object' || stage === null || Array.isArray(stage)) return stage;
      const input = (stage as Record<string, unknown>).input;
      if (input === undefined || input === null || typeof input === 'string') return stage;
      return { ...stage, input: JSON.stringify(input) };
    }),
  };
}
