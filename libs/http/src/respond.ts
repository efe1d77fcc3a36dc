import type { Context } from 'koa';

export function sendJson(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = JSON.stringify(body);
}

/**
 * An "empty" response of the spec: no body, and Content-Length: 0 on a 200 (addendum §1). Koa turns
 * a null body into 204, so a 200 gets an empty string without a Content-Type.
 */
export function sendEmpty(ctx: Context, status: 200 | 204): void {
  if (status === 204) {
    ctx.status = 204;
    ctx.body = null;
    return;
  }
  ctx.status = 200;
  ctx.body = '';
  ctx.remove('Content-Type');
}
