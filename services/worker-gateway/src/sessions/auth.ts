import type { Middleware } from 'koa';
import { Unauthorized } from '@po/domain';
import { findCurrentSession, type Db } from '@po/db';
import { hashSecret, type AppState } from '@po/http';

export interface SessionState {
  workerId: string;
  applicationId: number;
}

/**
 * X-Worker-Session (addendum §15): the worker's current token (a superseded one is invalid
 * everywhere), unexpired unless `checkExpiry` is false (shutdown). Heartbeat, events and shutdown
 * also need the body's workerId to match, so they authenticate after the body is parsed.
 */
export async function authenticateSession(
  db: Db,
  token: string,
  options: { now: Date; checkExpiry: boolean; workerId?: string },
): Promise<SessionState> {
  if (!token) throw new Unauthorized('Missing X-Worker-Session header.');
  const session = await findCurrentSession(db, hashSecret(token));
  if (!session) throw new Unauthorized('Invalid or superseded worker session.');
  if (options.checkExpiry && session.expiresAt <= options.now) throw new Unauthorized('Worker session expired.');
  if (options.workerId !== undefined && options.workerId !== session.workerId) {
    throw new Unauthorized('The worker session does not belong to this workerId.');
  }
  return { workerId: session.workerId, applicationId: session.applicationId };
}

/** Session check before the body: for lease and result calls. Stores the session on ctx.state. */
export function workerSession(db: Db, clock: () => Date): Middleware<AppState & { session?: SessionState }> {
  return async (ctx, next) => {
    ctx.state.session = await authenticateSession(db, ctx.get('x-worker-session'), { now: clock(), checkExpiry: true });
    await next();
  };
}
