import {
  IdempotencyConflict,
  ValidationFailed,
  creationIntentHash,
  planPipeline,
  type NewPipeline,
  type PipelineDefinitionInput,
} from '@po/domain';
import { bindIdempotencyKey, findIdempotencyKey, insertPipeline, isUniqueViolation, loadPipeline } from '@po/db';
import { rememberSensitive, startPipelineSpan, traceparentOf, type Span } from '@po/telemetry';
import { announce, type Deps } from '../deps.js';
import { pipelineResponse, type PipelineResponse } from './view.js';

/**
 * A pipeline without a traceId takes the creation request's trace id (its incoming traceparent's,
 * else a generated one), so the request and the pipeline share one trace (decision 0051).
 */
function plan(definition: PipelineDefinitionInput, origin: { applicationId: number; idempotencyKey?: string }, requestTraceId?: string): NewPipeline {
  const planned = planPipeline(definition.traceId === undefined && requestTraceId ? { ...definition, traceId: requestTraceId } : definition, origin);
  if (!planned.ok) throw new ValidationFailed(planned.errors);
  const sensitive = planned.pipeline.contextItems.filter((c) => c.isSensitive);
  if (sensitive.length > 0) rememberSensitive(sensitive.map((c) => c.value));
  return planned.pipeline;
}

/**
 * The pipeline's first span (tracing on only): the dispatcher makes each stage's span its child
 * through the traceparent of the pipeline.created event.
 */
async function announceCreated(deps: Deps, pipeline: NewPipeline, pipelineId: number, startTime: number): Promise<void> {
  const span: Span | undefined = startPipelineSpan('pipeline.create', { traceId: pipeline.traceId, applicationId: pipeline.applicationId, id: pipelineId }, startTime);
  await announce(deps, { type: 'pipeline.created', applicationId: pipeline.applicationId, pipelineId, traceparent: span && traceparentOf(span) });
  span?.end();
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
  requestTraceId?: string,
): Promise<PipelineResponse> {
  const started = Date.now();
  const pipeline = plan(definition, { applicationId }, requestTraceId);
  const id = await deps.db.$transaction((tx) => insertPipeline(tx, pipeline, deps.clock()));
  await announceCreated(deps, pipeline, id, started);
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
  requestTraceId?: string,
): Promise<IdempotentOutcome> {
  const started = Date.now();
  const key = body.idempotencyKey;
  const pipeline = plan(body, { applicationId, idempotencyKey: key }, requestTraceId);
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
    await announceCreated(deps, pipeline, id, started);
    return { created: true, wasExisting: false, pipeline: await respond(deps, id, false) };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const winner = await findIdempotencyKey(deps.db, applicationId, key);
    if (!winner) throw err;
    return resolveExisting(winner);
  }
}
