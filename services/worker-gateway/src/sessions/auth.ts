import type { Middleware } from 'koa';
import { DomainError, Unauthorized } from '@po/domain';
import { findCurrentSession, sqlOf, type Db } from '@po/db';
import { hashSecret, type AppState } from '@po/http';

export const KEY_REVOKED_DETAIL = 'The API key that bootstrapped this worker session is disabled or expired.';

export interface SessionState {
  workerId: string;
  applicationId: number;
}

/**
 * X-Worker-Session (addendum §15): the worker's current token (a superseded one is invalid
 * everywhere), unexpired unless `checkExpiry` is false (shutdown). A session whose bootstrapping
 * API key is disabled or expired has ended, like a superseded one (decision 0082). Heartbeat,
 * events and shutdown also need the body's workerId to match, so they authenticate after the body
 * is parsed.
 */
export async function authenticateSession(
  db: Db,
  token: string,
  options: { now: Date; checkExpiry: boolean; workerId?: string },
): Promise<SessionState> {
  if (!token) throw new Unauthorized('Missing X-Worker-Session header.');
  const session = await findCurrentSession(sqlOf(db), hashSecret(token));
  if (!session) throw new Unauthorized('Invalid or superseded worker session.');
  if (session.keyRevoked) throw new Unauthorized(KEY_REVOKED_DETAIL);
  if (options.checkExpiry && session.expiresAt <= options.now) throw new Unauthorized('Worker session expired.');
  if (options.workerId !== undefined && options.workerId !== session.workerId) {
    throw new Unauthorized('The worker session does not belong to this workerId.');
  }
  return { workerId: session.workerId, applicationId: session.applicationId };
}

/** What lease and result calls know of their session before it is checked. */
export interface PendingSession {
  token: string;
  tokenHash: string;
  /** Set once the session was found current and unexpired (by a hot statement or on its own). */
  verified?: SessionState;
}

export type SessionAppState = AppState & { session?: PendingSession };

/**
 * X-Worker-Session for lease and result calls (decision 0062). The hot statements of those calls
 * check the session themselves, so it costs no query of its own on success. The check order of
 * addendum §3 still holds: a missing header is a 401 at once, and when a later step would answer
 * with another error first (a bad path parameter, a body too large or invalid), the session is
 * checked before that error is reported, and an invalid one answers 401 instead.
 */
export function deferredSession(db: Db, clock: () => Date): Middleware<SessionAppState> {
  return async (ctx, next) => {
    const token = ctx.get('x-worker-session');
    if (!token) throw new Unauthorized('Missing X-Worker-Session header.');
    const pending: PendingSession = { token, tokenHash: hashSecret(token) };
    ctx.state.session = pending;
    try {
      await next();
    } catch (err) {
      if (!pending.verified && err instanceof DomainError && err.code !== 'unauthorized') {
        pending.verified = await authenticateSession(db, token, { now: clock(), checkExpiry: true });
      }
      throw err;
    }
  };
}
