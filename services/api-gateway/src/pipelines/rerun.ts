import { NotFound, PipelineNotTerminal, isTerminalPipeline, newTraceId, normaliseOptions, type NewPipeline, type StageOptions } from '@po/domain';
import { lockPipelineForRerun, readRerunSource, type RerunSource } from '@po/db';
import { createPipeline } from '@po/engine';
import type { Deps } from '../deps.js';
import { dispatchCreated } from './create.js';
import { pipelineResponse, type PipelineResponse } from './view.js';

/**
 * POST /pipelines/{pipelineId}/rerun (decision 0089): a new pipeline from the definition a
 * terminal pipeline was created with, made by the creation statement of POST /pipelines and
 * dispatched after commit like any creation. What it repeats:
 *
 * - the name, policies and keywords;
 * - the stages the pipeline was created with, in order, with their inputs and options (stages
 *   appended later, by a client or a worker's result, are not: they were the run's doing);
 * - the context items as created, that no stage result changed or removed (a changed value is
 *   gone, and what a stage wrote is an output of that run, not an input). Sensitive values are
 *   copied by the creation statement from the original's rows: they never reach this process, a
 *   response or a log.
 *
 * The rerun gets the request's trace id (a new run is a new trace), no idempotency key and no
 * schedule (it is not one of the schedule's runs), and `rerun_of` = the original. The original is
 * locked against deletion (retention) until the rerun commits.
 */
export async function rerunPipeline(deps: Deps, applicationId: number, pipelineId: number, requestTraceId?: string): Promise<PipelineResponse> {
  const started = Date.now();
  const { pipeline, record } = await deps.sql.transaction(async (tx) => {
    const original = await lockPipelineForRerun(tx, pipelineId);
    if (!original || original.applicationId !== applicationId) throw new NotFound(`Pipeline ${pipelineId} not found.`);
    if (!isTerminalPipeline(original.status)) throw new PipelineNotTerminal(pipelineId, original.status);
    const source = await readRerunSource(tx, pipelineId);
    if (!source) throw new Error(`pipeline ${pipelineId} vanished under its lock`);
    const planned = rerunOf(source, applicationId, requestTraceId ?? newTraceId());
    const created = await createPipeline(tx, planned, deps.clock(), null, { rerunOf: pipelineId });
    if (!created) throw new Error('a rerun inserted nothing');
    return { pipeline: planned, record: created };
  });
  await dispatchCreated(deps, pipeline, record.id, started);
  return pipelineResponse(record);
}

/**
 * The pipeline to create. Stored rows already passed creation's rules (dependsOn names earlier
 * stages, which the stages as created still are). A sensitive item's value is left empty here:
 * the statement copies it.
 */
function rerunOf(source: RerunSource, applicationId: number, traceId: string): NewPipeline {
  return {
    applicationId,
    name: source.name,
    traceId,
    policies: source.policies,
    idempotencyKey: null,
    scheduleId: null,
    stages: source.stages.map((s) => {
      const stored = s.options as StageOptions;
      return { ...s, options: normaliseOptions(stored, stored.runNextIfFailed) };
    }),
    contextItems: source.context.map((c) => ({ key: c.key, value: c.value ?? '', valueType: c.valueType, isSensitive: c.isSensitive })),
    keywords: source.keywords,
  };
}
