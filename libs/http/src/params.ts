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
