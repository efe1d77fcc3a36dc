import type { Context } from 'koa';

export function sendJson(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = JSON.stringify(body);
}

/** An "empty" response of the spec: no body and Content-Length: 0 (addendum §1). */
export function sendEmpty(ctx: Context, status: 200 | 204): void {
  ctx.status = status;
  ctx.body = null;
  if (status === 200) ctx.length = 0;
}
