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
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw ValidationFailed.at('', 'must be valid JSON');
  }
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
