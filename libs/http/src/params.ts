import type { Middleware } from 'koa';
import { ValidationFailed, type FieldError } from '@po/domain';
import type { AppState } from './app.js';

type Validation<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** Validates one path parameter into ctx.state.params[name] (400 with the bare parameter name). */
export function pathParam<T>(name: string, parse: (raw: string) => Validation<T>): Middleware<AppState> {
  return async (ctx, next) => {
    const raw = (ctx as unknown as { params: Record<string, string> }).params[name] ?? '';
    const result = parse(raw);
    if (!result.ok) throw new ValidationFailed(result.errors);
    ctx.state.params[name] = result.value;
    await next();
  };
}

type QueryValue = string | readonly string[] | undefined;

/** Validates query parameters into ctx.state.params, reporting every bad one (400, bare names). */
export function queryParams(parsers: Record<string, (raw: QueryValue) => Validation<unknown>>): Middleware<AppState> {
  return async (ctx, next) => {
    const errors: FieldError[] = [];
    for (const [name, parse] of Object.entries(parsers)) {
      const result = parse(ctx.query[name]);
      if (result.ok) ctx.state.params[name] = result.value;
      else errors.push(...result.errors);
    }
    if (errors.length > 0) throw new ValidationFailed(errors);
    await next();
  };
}
