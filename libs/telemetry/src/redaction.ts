/**
 * The logger's last line of defence (decision 0053): every serialised log line passes through
 * `redactLine`, which replaces API keys, worker session tokens and the sensitive context values this
 * process saw recently, wherever they sit in a string of the line. Code never logs context values
 * on purpose; this catches what an error message or a driver might carry.
 */

const CREDENTIAL = /p[ow]s_[\w-]{43}/g;
const STRING_LITERAL = /"(?:[^"\\]|\\.)*"/g;
const CENSOR = '[REDACTED]';

/** Shorter values are not matched: they would also match ordinary words and ids of a log line. */
export const MIN_SENSITIVE_CHARS = 6;
/** The most recent values kept (a bounded, per-process memory; older ones are forgotten). */
export const MAX_SENSITIVE_VALUES = 256;

/** value → its JSON-escaped form (how it appears inside a serialised line). */
const remembered = new Map<string, string>();
/** The escaped forms, longest first (a value that contains another is censored whole); rebuilt on change. */
let longestFirst: string[] | undefined;

/** Tells the logger these values are sensitive: they are censored from every line from now on. */
export function rememberSensitive(values: Iterable<string>): void {
  for (const value of values) {
    if (value.length < MIN_SENSITIVE_CHARS) continue;
    remembered.delete(value);
    remembered.set(value, JSON.stringify(value).slice(1, -1));
    longestFirst = undefined;
    if (remembered.size > MAX_SENSITIVE_VALUES) {
      const oldest = remembered.keys().next();
      if (!oldest.done) remembered.delete(oldest.value);
    }
  }
}

/** For tests: forget every remembered value. */
export function forgetSensitive(): void {
  remembered.clear();
  longestFirst = undefined;
}

function escapedValues(): string[] {
  longestFirst ??= [...remembered.values()].sort((a, b) => b.length - a.length);
  return longestFirst;
}

function censorLiteral(literal: string): string {
  let out = literal.includes('pos_') || literal.includes('pws_') ? literal.replace(CREDENTIAL, CENSOR) : literal;
  for (const escaped of escapedValues()) {
    if (out.includes(escaped)) out = out.split(escaped).join(CENSOR);
  }
  return out;
}

/** Censors one serialised JSON line; only string literals change, so the line stays valid JSON. */
export function redactLine(line: string): string {
  if (!line.includes('pos_') && !line.includes('pws_') && !mentionsRemembered(line)) return line;
  return line.replace(STRING_LITERAL, censorLiteral);
}

function mentionsRemembered(line: string): boolean {
  for (const escaped of remembered.values()) if (line.includes(escaped)) return true;
  return false;
}

/** rememberSensitive for context items: only the values flagged sensitive. */
export function rememberSensitiveItems(items: readonly { value?: string | null; isSensitive?: boolean | null }[]): void {
  for (const item of items) {
    if (item.isSensitive && item.value) rememberSensitive([item.value]);
  }
}
