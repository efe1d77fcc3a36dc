import {
  IdempotencyConflict,
  ValidationFailed,
  creationIntentHash,
  planPipeline,
  type NewPipeline,
  type PipelineDefinitionInput,
} from '@po/domain';
import { bindIdempotencyKey, findIdempotencyKey, insertPipeline, isUniqueViolation, loadPipeline } from '@po/db';
import { announce, type Deps } from '../deps.js';
import { pipelineResponse, type PipelineResponse } from './view.js';

function plan(definition: PipelineDefinitionInput, origin: { applicationId: number; idempotencyKey?: string }): NewPipeline {
  const planned = planPipeline(definition, origin);
  if (!planned.ok) throw new ValidationFailed(planned.errors);
  return planned.pipeline;
}

async function respond(deps: Deps, pipelineId: number, wasExisting: boolean): Promise<PipelineResponse> {
  const record = await loadPipeline(deps.db, pipelineId);
  if (!record) throw new Error(`pipeline ${pipelineId} vanished after creation`);
  return pipelineResponse(record, wasExisting);
}

/** POST /pipelines: every call creates a new pipeline. */
export async function createLegacyPipeline(
  deps: Deps,
  applicationId: number,
  definition: PipelineDefinitionInput,
): Promise<PipelineResponse> {
  const pipeline = plan(definition, { applicationId });
  const id = await deps.db.$transaction((tx) => insertPipeline(tx, pipeline, deps.clock()));
  await announce(deps, { type: 'pipeline.created', applicationId, pipelineId: id });
  return respond(deps, id, false);
}

export interface IdempotentOutcome {
  created: boolean;
  wasExisting: boolean;
  pipeline: PipelineResponse;
}

/**
 * POST /pipelines/idempotent (addendum §6). The (application, key) primary key of
 * idempotency_keys decides races: of concurrent identical requests one inserts, the others hit the
 * unique violation after it commits and resolve to its pipeline.
 */
export async function createIdempotentPipeline(
  deps: Deps,
  applicationId: number,
  body: PipelineDefinitionInput & { idempotencyKey: string },
): Promise<IdempotentOutcome> {
  const key = body.idempotencyKey;
  const pipeline = plan(body, { applicationId, idempotencyKey: key });
  const intentHash = creationIntentHash(body as unknown as Record<string, unknown>);

  const resolveExisting = async (binding: { pipelineId: number; intentHash: string }) => {
    if (binding.intentHash !== intentHash) throw new IdempotencyConflict();
    return { created: false, wasExisting: true, pipeline: await respond(deps, binding.pipelineId, true) };
  };

  const existing = await findIdempotencyKey(deps.db, applicationId, key);
  if (existing) return resolveExisting(existing);
  try {
    const id = await deps.db.$transaction(async (tx) => {
      const pipelineId = await insertPipeline(tx, pipeline, deps.clock());
      await bindIdempotencyKey(tx, { applicationId, key, pipelineId, intentHash });
      return pipelineId;
    });
    await announce(deps, { type: 'pipeline.created', applicationId, pipelineId: id });
    return { created: true, wasExisting: false, pipeline: await respond(deps, id, false) };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const winner = await findIdempotencyKey(deps.db, applicationId, key);
    if (!winner) throw err;
    return resolveExisting(winner);
  }
}
