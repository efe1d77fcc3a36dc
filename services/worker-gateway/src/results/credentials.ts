import { Unauthorized } from '@po/domain';
import { parseId } from '@po/contracts';
import { resultIntake, sqlOf } from '@po/db';
import { hashSecret } from '@po/http';
import type { Deps } from '../deps.js';
import { KEY_REVOKED_DETAIL } from '../sessions/auth.js';

/** What a result's one read established: the caller, and the stage it names (when it exists). */
export interface ResultCredentials {
  /** When the request arrived: the start of its `stage.result` span. */
  started: number;
  applicationId: number;
  workerId: string;
  stage: null | { applicationId: number; pipelineId: number; spanId: string };
}

/**
 * The credentials of POST /stages/{id}/result, checked before the path, the size and the body
 * (addendum §3): a current, unexpired session of a still valid key (decision 0082), of the same
 * application as the X-API-Key. The same read fetches the stage's owner for the checks after the
 * body (decision 0062), so a result still costs one read; a malformed path id looks up no stage.
 */
export async function checkResultCredentials(
  deps: Deps,
  request: { applicationId: number; sessionToken: string; rawStageId: string },
): Promise<ResultCredentials> {
  const started = Date.now();
  if (!request.sessionToken) throw new Unauthorized('Missing X-Worker-Session header.');
  const id = parseId(request.rawStageId, 'stageId');
  const intake = await resultIntake(sqlOf(deps.db), {
    sessionTokenHash: hashSecret(request.sessionToken),
    stageId: id.ok ? id.value : null,
  });
  const session = intake.session;
  if (!session) throw new Unauthorized('Invalid or superseded worker session.');
  if (!session.live) throw new Unauthorized('Worker session expired.');
  if (session.keyRevoked) throw new Unauthorized(KEY_REVOKED_DETAIL);
  if (session.applicationId !== request.applicationId) {
    throw new Unauthorized('The worker session belongs to another application than the API key.');
  }
  return {
    started,
    applicationId: request.applicationId,
    workerId: session.workerId,
    stage: intake.stage,
  };
}
