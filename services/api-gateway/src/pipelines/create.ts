import {
  IdempotencyConflict,
  ValidationFailed,
  creationIntentHash,
  planPipeline,
  type NewPipeline,
  type PipelineDefinitionInput,
} from '@po/domain';
import { readPipelineByKey } from '@po/db';
import { createPipeline } from '@po/engine';
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
 * Dispatches a committed creation: its first pass runs in this process (decision 0102), or, when
 * too many wait or the pass fails, pipeline-service runs it after a `pipeline.created` event.
 * The pipeline's first span (tracing on only) is the cause the dispatch spans link to.
 */
export async function dispatchCreated(deps: Deps, pipeline: NewPipeline, pipelineId: number, startTime: number): Promise<void> {
  const span: Span | undefined = startPipelineSpan('pipeline.create', { traceId: pipeline.traceId, applicationId: pipeline.applicationId, id: pipelineId }, startTime);
  const cause = span && traceparentOf(span);
  const handOver = () => announce(deps, { type: 'pipeline.created', applicationId: pipeline.applicationId, pipelineId, traceparent: cause });
  if (!deps.firstPasses.start(pipelineId, cause, handOver)) await handOver();
  span?.end();
}

/**
 * Creates the pipeline and dispatches it; null when an idempotency key was bound already. While no
 * first pass runs or waits in this process (light load), the pass runs in the creation's own
 * transaction (decision 0106): the first stage's message is published before the creation commits,
 * one commit sooner, and the answer leaves after it. Otherwise — or when that pass fails, which
 * rolls the creation back so it is made again alone — the creation commits by itself and
 * dispatchCreated takes it (batched passes, decision 0102).
 */
async function createAndDispatch(deps: Deps, pipeline: NewPipeline, startTime: number, intentHash: string | null = null) {
  if (deps.firstPasses.claim()) {
    let span: Span | undefined;
    let passFailed = false;
    let afterCommit: (() => Promise<void>) | undefined;
    try {
      const record = await deps.sql.transaction(
        async (tx) => {
          const created = await createPipeline(tx, pipeline, deps.clock(), intentHash);
          if (!created) return null;
          span = startPipelineSpan('pipeline.create', { traceId: pipeline.traceId, applicationId: pipeline.applicationId, id: created.id }, startTime);
          try {
            afterCommit = await deps.firstPasses.within(tx, created.id, span && traceparentOf(span));
          } catch (err) {
            passFailed = true;
            throw err;
          }
          return created;
        },
        { keyLookups: true },
      );
      await afterCommit?.();
      span?.end();
      return record;
    } catch (err) {
      if (!passFailed) throw err;
      deps.logger.warn({ err }, 'first pass in the creation failed; creating the pipeline again without it');
    } finally {
      deps.firstPasses.release();
    }
  }
  const record = await createPipeline(deps.sql, pipeline, deps.clock(), intentHash);
  if (record) await dispatchCreated(deps, pipeline, record.id, startTime);
  return record;
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
  const record = await createAndDispatch(deps, pipeline, started);
  if (!record) throw new Error('a creation without idempotency key inserted nothing');
  return pipelineResponse(record);
}

export interface IdempotentOutcome {
  created: boolean;
  wasExisting: boolean;
  pipeline: PipelineResponse;
}

/**
 * POST /pipelines/idempotent (addendum §6). One statement binds the key and creates the pipeline
 * (decision 0070); the (application, key) primary key of idempotency_keys decides races: of
 * concurrent requests one binds, the others wait for it to commit, insert nothing, and resolve
 * the key with one more statement that reads the binding and the pipeline together.
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

  const created = await createAndDispatch(deps, pipeline, started, intentHash);
  if (created) {
    return { created: true, wasExisting: false, pipeline: pipelineResponse(created) };
  }
  const existing = await readPipelineByKey(deps.sql, applicationId, key);
  // Pipelines and their keys are never deleted: a key that refused the binding stays bound.
  if (!existing) throw new Error(`idempotency key of application ${applicationId} neither bound nor found`);
  if (existing.intentHash !== intentHash) throw new IdempotencyConflict();
  return { created: false, wasExisting: true, pipeline: pipelineResponse(existing.pipeline, true) };
}
