import { redactSecrets } from '@po/domain';
import { findEnabledApiKeyIgnoringExpiry, insertSystemLog, sensitiveValues } from '@po/db';
import { hashSecret } from '@po/http';
import type { LogRequest } from '@po/contracts';
import type { Deps } from '../deps.js';

/**
 * POST /logs: stores a free-form line. The body key only attaches the line to an application
 * (matches and not disabled; expiry ignored) and never causes a 401 (addendum §2, §16).
 */
export async function storeLog(deps: Deps, body: LogRequest): Promise<{ id: number; applicationId: number | null; stored: true }> {
  const key = body.apiKey ? await findEnabledApiKeyIgnoringExpiry(deps.db, hashSecret(body.apiKey)) : null;
  const pipelineId = body.pipelineId ?? null;
  const message = pipelineId === null ? body.message : redactSecrets(body.message, await sensitiveValues(deps.db, pipelineId));
  const id = await insertSystemLog(deps.db, {
    applicationId: key?.applicationId ?? null,
    message,
    logLevel: body.logLevel ?? 'Information',
    pipelineId,
    stageId: body.stageId ?? null,
    keywords: body.keywords ?? null,
    created: body.created ? new Date(body.created) : deps.clock(),
  });
  return { id, applicationId: key?.applicationId ?? null, stored: true };
}
