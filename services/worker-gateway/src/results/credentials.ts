import { Unauthorized } from '@po/domain';
import { parseId } from '@po/contracts';
import { resultIntake, sqlOf, type LiveSession, type ResultIntake } from '@po/db';
import { hashSecret } from '@po/http';
import type { Deps } from '../deps.js';
import { KEY_REVOKED_DETAIL } from '../sessions/auth.js';

export type StageOwner = {
  applicationId: number;
  pipelineId: number;
  spanId: string;
  /** The stage's current execution and its lease owner, when read (not for a delivery held here). */
  current?: null | { executionId: string; leaseOwner: string | null };
};

/** What a result's credentials check established: the caller, and the stage when it was read too. */
export interface ResultCredentials {
  /** When the request arrived: the start of its `stage.result` span. */
  started: number;
  applicationId: number;
  workerId: string;
  sessionTokenHash: string;
  /** The stage the path names (null: none), or undefined when the session came from the cache and the stage is not known yet. */
  stage: StageOwner | null | undefined;
}

/**
 * The credentials of POST /stages/{id}/result, checked before the path, the size and the body
 * (addendum §3): a current, unexpired session of a still valid key (decision 0082), of the same
 * application as the X-API-Key. A session this process saw live within seconds comes from its
 * cache (decision 0099), checked for expiry here; otherwise one read finds the session and the
 * stage's owner together (decision 0062), and a malformed path id looks up no stage.
 */
export async function checkResultCredentials(
  deps: Deps,
  request: { applicationId: number; sessionToken: string; rawStageId: string },
): Promise<ResultCredentials> {
  const started = Date.now();
  if (!request.sessionToken) throw new Unauthorized('Missing X-Worker-Session header.');
  const id = parseId(request.rawStageId, 'stageId');
  const sessionTokenHash = hashSecret(request.sessionToken);
  const now = deps.clock();
  let intake: ResultIntake | undefined;
  const read = async () => (intake = await resultIntake(sqlOf(deps.db), { sessionTokenHash, stageId: id.ok ? id.value : null }));
  const live = (s: ResultIntake['session']): LiveSession | null =>
    s && s.live && !s.keyRevoked ? { workerId: s.workerId, applicationId: s.applicationId, validUntil: s.validUntil } : null;
  let cached = await deps.sessions.get(sessionTokenHash, async () => live((await read()).session));
  // A cached session that has since expired (or its key) is read again, for the exact answer.
  if (!intake && cached && cached.validUntil <= now) cached = live((await read()).session);
  if (intake) {
    const session = intake.session;
    if (!session) throw new Unauthorized('Invalid or superseded worker session.');
    if (!session.live) throw new Unauthorized('Worker session expired.');
    if (session.keyRevoked) throw new Unauthorized(KEY_REVOKED_DETAIL);
  }
  if (!cached) throw new Unauthorized('Invalid or superseded worker session.');
  if (cached.applicationId !== request.applicationId) {
    throw new Unauthorized('The worker session belongs to another application than the API key.');
  }
  return { started, applicationId: request.applicationId, workerId: cached.workerId, sessionTokenHash, stage: intake ? intake.stage : undefined };
}

/** The stage a result names, when the credentials did not read it: one read of its owner. */
export async function readStageOwner(deps: Deps, caller: ResultCredentials, stageId: number): Promise<StageOwner | null> {
  return (await resultIntake(sqlOf(deps.db), { sessionTokenHash: caller.sessionTokenHash, stageId })).stage;
}
