import type { Middleware } from 'koa';
import { PayloadTooLarge, ValidationFailed, type FieldError } from '@po/domain';
import type { AppState } from './app.js';

type Validation<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/**
 * Reads the raw body with a byte limit (a Content-Length over the limit is refused before reading),
 * then parses it as JSON whatever its Content-Type says (addendum §1). Returns undefined when empty.
 */
async function readJson(ctx: Parameters<Middleware<AppState>>[0], limitBytes: number): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (Number.isFinite(declared) && declared > limitBytes) {
    ctx.req.resume();
    throw new PayloadTooLarge(limitBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) {
      ctx.req.resume();
      throw new PayloadTooLarge(limitBytes);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks, size).toString('utf8');
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw ValidationFailed.at('', 'must be valid JSON');
  }
  const problem = unstorableJson(value);
  if (problem) throw ValidationFailed.at(problem.field, problem.message);
  return value;
}

/** Nesting deeper than this is refused (decision 0010): free-form members stay JSON we can store. */
export const MAX_JSON_DEPTH = 64;

const pointerToken = (key: string | number) => String(key).replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Finds what PostgreSQL could not store or the server could not walk safely: a U+0000 in any
 * string or member name, or nesting past MAX_JSON_DEPTH. Iterative, so depth itself cannot
 * overflow the stack here.
 */
export function unstorableJson(root: unknown): { field: string; message: string } | null {
  const stack: { value: unknown; pointer: string; depth: number }[] = [{ value: root, pointer: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, pointer, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return { field: pointer, message: 'must not contain the NUL character (U+0000)' };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { field: pointer, message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` };
    const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    for (const [key, child] of entries) {
      if (typeof key === 'string' && key.includes('\u0000')) return { field: pointer, message: 'member names must not contain the NUL character (U+0000)' };
      stack.push({ value: child, pointer: `${pointer}/${pointerToken(key)}`, depth: depth + 1 });
    }
  }
  return null;
}

/** Body size check, then validation; the validated value lands in ctx.state.body. */
export function jsonBody<T>(validate: (data: unknown) => Validation<T>, limitBytes: number): Middleware<AppState> {
  return async (ctx, next) => {
    const raw = await readJson(ctx, limitBytes);
    const result = validate(raw === undefined ? null : raw);
    if (!result.ok) throw new ValidationFailed(result.errors);
    ctx.state.body = result.value;
    await next();
  };
}

/** Like jsonBody, but no body (or an empty one) is allowed and validates as `{}`. */
export function optionalJsonBody<T>(validate: (data: unknown) => Validation<T>, limitBytes: number): Middleware<AppState> {
  return async (ctx, next) => {
    const raw = await readJson(ctx, limitBytes);
    const result = validate(raw === undefined ? {} : raw);
    if (!result.ok) throw new ValidationFailed(result.errors);
    ctx.state.body = result.value;
    await next();
  };
}
