/**
 * The cron dialect of addendum §14.2: five fields, names, ranges, steps, lists, the Vixie
 * day-of-month/day-of-week rule, and the descriptors @hourly, @daily, @midnight and @every.
 * Everything else (seconds or year fields, `? L W #`, other descriptors) is rejected with a message
 * a person can act on. Planning (time zones, DST) lives in cron-ticks.ts.
 */
import { limits } from '@po/contracts';

export type CronParse =
  | { ok: true; every: null; cron: CronExpression }
  | { ok: true; every: number /* seconds */; cron: null }
  | { ok: false; message: string };

export interface CronExpression {
  /** The expression as given. */
  source: string;
  /** Matching values, ascending and without duplicates. */
  minutes: readonly number[];
  hours: readonly number[];
  daysOfMonth: readonly number[];
  months: readonly number[];
  /** 0 = Sunday .. 6 = Saturday (7 is folded into 0). */
  daysOfWeek: readonly number[];
  /** Vixie: a day field is unrestricted when its text starts with `*` (`*`, `*∕2`). */
  domRestricted: boolean;
  dowRestricted: boolean;
  /** The hour field is a single value, a range or a list of those (no `*`, no step): drives the fall-back rule. */
  hourIsFixed: boolean;
}

/** Longest accepted expression, in characters (§14.2 [+]). */
export const CRON_MAX_CHARS: number = limits.cronExpressionChars;
/** Bounds of an `@every` duration, in seconds (§14.2: 10 s .. 366 days). */
export const EVERY_MIN_SECONDS = 10;
export const EVERY_MAX_SECONDS = 366 * 86_400;

interface FieldSpec {
  name: string;
  min: number;
  /** Highest value accepted in the text (7 for day-of-week). */
  max: number;
  names: readonly string[] | null;
  /** Offset of names[0]: JAN = 1, SUN = 0. */
  nameBase: number;
}

const MONTH_NAMES = [
  'JAN',
  'FEB',
  'MAR',
  'APR',
  'MAY',
  'JUN',
  'JUL',
  'AUG',
  'SEP',
  'OCT',
  'NOV',
  'DEC',
];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59, names: null, nameBase: 0 },
  { name: 'hour', min: 0, max: 23, names: null, nameBase: 0 },
  { name: 'day-of-month', min: 1, max: 31, names: null, nameBase: 1 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, nameBase: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, nameBase: 0 },
];

const DESCRIPTORS: Record<string, string> = {
  '@hourly': '0 * * * *',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
};

class CronSyntaxError extends Error {}

function fail(spec: FieldSpec, message: string): never {
  throw new CronSyntaxError(`${spec.name} field: ${message}`);
}

function parseValue(spec: FieldSpec, text: string): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max)
      fail(spec, `${text} is out of range ${spec.min}-${spec.max}`);
    return value;
  }
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (/^[a-z]{3}$/i.test(text) && index >= 0) return index + spec.nameBase;
  if (/^(?:\d*[LW]{1,2}\d*|L-\d+)$/i.test(text)) {
    fail(spec, `"${text}" is not supported (L and W are not part of this dialect)`);
  }
  const hint =
    spec.names === null ? 'a number' : `a number or a name such as ${spec.names[1] ?? ''}`;
  return fail(spec, `"${text}" is not a valid value; use ${hint}`);
}

function parseStep(spec: FieldSpec, text: string): number {
  if (!/^\d+$/.test(text)) fail(spec, `step "${text}" is not a number`);
  const step = Number(text);
  const span = spec.max - spec.min + 1;
  if (step === 0) fail(spec, 'step must be at least 1');
  if (step > span) fail(spec, `step ${text} is out of range 1-${span}`);
  return step;
}

/** One list item: `*`, `n`, `a-b`, `*∕s`, `a-b∕s`, `a∕s`. Adds its values to `into`. */
function parseItem(spec: FieldSpec, item: string, into: Set<number>): void {
  if (item === '') fail(spec, 'empty list item');
  const parts = item.split('/');
  if (parts.length > 2) fail(spec, `"${item}" has more than one step`);
  const [rangeText = '', stepText] = parts;
  const step = stepText === undefined ? 1 : parseStep(spec, stepText);
  let from: number;
  let to: number;
  if (rangeText === '*') {
    from = spec.min;
    to = spec.max;
  } else {
    const bounds = rangeText.split('-');
    if (bounds.length > 2 || bounds.some((b) => b === ''))
      fail(spec, `"${rangeText}" is not a valid range`);
    from = parseValue(spec, bounds[0] ?? '');
    if (bounds.length === 2) {
      to = parseValue(spec, bounds[1] ?? '');
      if (from > to) fail(spec, `range ${rangeText} is reversed`);
    } else {
      to = stepText === undefined ? from : spec.max;
    }
  }
  for (let v = from; v <= to; v += step) into.add(spec.name === 'day-of-week' && v === 7 ? 0 : v);
}

function parseField(spec: FieldSpec, text: string): number[] {
  if (text.includes('?')) fail(spec, '"?" is not supported; use *');
  if (text.includes('#')) fail(spec, '"#" (nth weekday of the month) is not supported');
  const values = new Set<number>();
  for (const item of text.split(',')) parseItem(spec, item, values);
  return [...values].sort((a, b) => a - b);
}

function parseFields(source: string, text: string): CronExpression {
  const fields = text.split(/\s+/);
  if (fields.length !== 5) {
    const extra =
      fields.length === 6 || fields.length === 7
        ? '; seconds and year fields are not supported'
        : '';
    throw new CronSyntaxError(
      `expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}${extra}`,
    );
  }
  const [minute = '', hour = '', dom = '', month = '', dow = ''] = fields;
  const spec = (i: number): FieldSpec => FIELDS[i] as FieldSpec;
  return {
    source,
    minutes: parseField(spec(0), minute),
    hours: parseField(spec(1), hour),
    daysOfMonth: parseField(spec(2), dom),
    months: parseField(spec(3), month),
    daysOfWeek: parseField(spec(4), dow),
    domRestricted: !dom.startsWith('*'),
    dowRestricted: !dow.startsWith('*'),
    hourIsFixed: !hour.includes('*') && !hour.includes('/'),
  };
}

const EVERY_SYNTAX = /^(?:\d+[hms])+$/i;

/** `@every <Go-style duration>` with units h, m, s; returns seconds. */
function parseEvery(text: string): number {
  if (!EVERY_SYNTAX.test(text)) {
    throw new CronSyntaxError(
      `@every duration "${text}" is not valid; use <integer><unit> pairs with units h, m, s, such as 90s, 5m or 1h30m`,
    );
  }
  let seconds = 0;
  for (const [, amount = '', unit = ''] of text.matchAll(/(\d+)([hms])/gi)) {
    const factor = unit.toLowerCase() === 'h' ? 3600 : unit.toLowerCase() === 'm' ? 60 : 1;
    seconds += Number(amount) * factor;
  }
  if (!(seconds >= EVERY_MIN_SECONDS && seconds <= EVERY_MAX_SECONDS)) {
    throw new CronSyntaxError(`@every duration "${text}" must be between 10s and 366 days (8784h)`);
  }
  return seconds;
}

function parseDescriptor(source: string, text: string): CronParse {
  const [name = '', ...rest] = text.split(/\s+/);
  const lower = name.toLowerCase();
  if (lower === '@every') {
    if (rest.length !== 1)
      throw new CronSyntaxError('@every needs exactly one duration, such as @every 5m');
    return { ok: true, every: parseEvery(rest[0] ?? ''), cron: null };
  }
  const expansion = DESCRIPTORS[lower];
  if (expansion === undefined) {
    throw new CronSyntaxError(
      `descriptor "${name}" is not supported; use @hourly, @daily, @midnight or @every <duration>`,
    );
  }
  if (rest.length > 0) throw new CronSyntaxError(`${name} takes no arguments`);
  return { ok: true, every: null, cron: parseFields(source, expansion) };
}

/**
 * Parses an expression of the §14.2 dialect. Messages name the field and the problem, for example
 * "minute field: 61 is out of range 0-59". The "no occurrence within 5 years" check is in validatePlan.
 */
export function parseCron(expression: string): CronParse {
  if ([...expression].length > CRON_MAX_CHARS) {
    return { ok: false, message: `must have at most ${CRON_MAX_CHARS} characters` };
  }
  const text = expression.trim();
  if (text === '') return { ok: false, message: 'must not be empty' };
  try {
    if (text.startsWith('@')) return parseDescriptor(expression, text);
    return { ok: true, every: null, cron: parseFields(expression, text) };
  } catch (error) {
    if (error instanceof CronSyntaxError) return { ok: false, message: error.message };
    throw error;
  }
}

/** The Vixie day rule: both day fields restricted → either matches; otherwise both must match. */
export function cronMatchesDay(
  cron: CronExpression,
  dayOfMonth: number,
  dayOfWeek: number,
): boolean {
  const domMatch = cron.daysOfMonth.includes(dayOfMonth);
  const dowMatch = cron.daysOfWeek.includes(dayOfWeek);
  return cron.domRestricted && cron.dowRestricted ? domMatch || dowMatch : domMatch && dowMatch;
}
