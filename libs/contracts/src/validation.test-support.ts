// Helpers shared by the unit tests of this package (not part of the build).
import type { FieldError, Validation } from './validate.js';

export function errorsOf<T>(result: Validation<T>): FieldError[] {
  if (result.ok)
    throw new Error(`expected a validation failure, got ${JSON.stringify(result.value)}`);
  return result.errors;
}

export function valueOf<T>(result: Validation<T>): T {
  if (!result.ok) throw new Error(`expected a valid body, got ${JSON.stringify(result.errors)}`);
  return result.value;
}

/** A deep copy of `body` with `value` set at the JSON Pointer `pointer` (parents must exist). */
export function withAt(body: unknown, pointer: string, value: unknown): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  const tokens = pointer.split('/').slice(1);
  const last = tokens.pop();
  if (last === undefined) return value;
  let target: Record<string, unknown> = copy;
  for (const token of tokens) target = target[token] as Record<string, unknown>;
  target[last] = value;
  return copy;
}

/** A deep copy of `body` without the member at `pointer`. */
export function withoutAt(body: unknown, pointer: string): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  const tokens = pointer.split('/').slice(1);
  const last = tokens.pop() ?? '';
  let target: Record<string, unknown> = copy;
  for (const token of tokens) target = target[token] as Record<string, unknown>;
  delete target[last];
  return copy;
}

export const chars = (n: number, ch = 'a'): string => ch.repeat(n);
export const items = <T>(n: number, make: (i: number) => T): T[] =>
  Array.from({ length: n }, (_, i) => make(i));

export const stage = { stageName: 'extract', stageHandlerName: 'extract-handler' };
export const definition = { name: 'nightly-import', stages: [stage] };
