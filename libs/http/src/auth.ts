import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import { Unauthorized } from '@po/domain';
import type { AppState } from './app.js';

export interface AuthenticatedApp {
  applicationId: number;
  keyId: number;
}

/** Resolves the SHA-256 hex of a presented key to a valid (not disabled, not expired) key. */
export type ApiKeyResolver = (keyHash: string) => Promise<AuthenticatedApp | null>;

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** X-API-Key authentication: 401 for a missing, unknown, disabled or expired key. */
export function apiKeyAuth(resolve: ApiKeyResolver): Middleware<AppState> {
  return async (ctx, next) => {
    const key = ctx.get('x-api-key');
    if (!key) throw new Unauthorized('Missing X-API-Key header.');
    const app = await resolve(hashSecret(key));
    if (!app) throw new Unauthorized('Invalid API key.');
    ctx.state.applicationId = app.applicationId;
    ctx.state.apiKeyId = app.keyId;
    await next();
  };
}
