import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from './app.js';

/** Strong validator of a body: its SHA-256, base64url (decision 0093). */
export function bodyEtag(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url')}"`;
}

/**
 * Whether an If-None-Match header names `etag` (RFC 9110 §13.1.2: weak comparison, so a `W/`
 * prefix a proxy may have added still matches; `*` matches any current representation).
 */
export function matchesIfNoneMatch(header: string, etag: string): boolean {
  const wanted = etag.replace(/^W\//, '');
  return header
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => tag === '*' || tag.replace(/^W\//, '') === wanted);
}

const isJson = (type: string) => /^application\/([a-z.+-]*\+)?json\b/.test(type);

/**
 * Conditional GET for the JSON reads of an API (decision 0093): a 200 JSON answer to GET or HEAD
 * gets a strong ETag, the hash of its body, and an If-None-Match naming it turns the answer into a
 * 304 without a body. The body is still computed (the reads are single statements); what polling
 * saves is the transfer and the client's parse and re-render. Every answer it passes says
 * `Cache-Control: no-store` unless a handler chose otherwise: tenant data never sits in a shared
 * or browser cache, and a client that polls keeps the last body and ETag itself.
 */
export function conditionalGet(): Middleware<AppState> {
  return async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    await next();
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.status !== 200) return;
    const body: unknown = ctx.body;
    if (!(typeof body === 'string' || Buffer.isBuffer(body)) || !isJson(ctx.type)) return;
    const etag = bodyEtag(body);
    ctx.set('ETag', etag);
    const ifNoneMatch = ctx.get('If-None-Match');
    if (ifNoneMatch !== '' && matchesIfNoneMatch(ifNoneMatch, etag)) {
      ctx.status = 304;
      ctx.body = null;
    }
  };
}
