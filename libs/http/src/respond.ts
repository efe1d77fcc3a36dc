import type { ServerResponse } from 'node:http';
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

/**
 * Aborts when the client goes away before its answer was written: a pull stops waiting, and a
 * message taken for it goes back rather than to a closed socket.
 */
export function clientGone(ctx: { res: ServerResponse }): AbortSignal {
  const gone = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) gone.abort();
  });
  return gone.signal;
}
