import { checkAddedStages, stageFromInfo, type StageOptions } from '@po/domain';
import { statement, type Queryable } from '@po/db';
import type { StageResultMessage } from '@po/queues';
import type { Batch } from '../batch.js';
import type { PassStage } from '../store.js';
import { stageItem } from './create.js';

/**
 * Append by a worker (addendum §5.2): the stages a result carries go at the end of its pipeline,
 * NotStarted, re-checked when the result is applied. (An append through the API is create.ts's.)
 */

export interface NewStageRow {
  pipelineId: number;
  applicationId: number;
  position: number;
  name: string;
  handlerName: string;
  description: string | null;
  input: string;
  options: StageOptions;
  policies: unknown;
  isEvent: boolean;
  spanId: string;
}

// Inserted in position order, so stage ids increase with position (addendum §6).
const INSERT_STAGES = statement(
  'engine_insert_stages',
  `INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, description, input, options, concurrency_key, priority, policies, is_event, span_id, created_at)
   SELECT d.pipeline_id, d.application_id, d.position, d.name, d.handler_name, d.description, d.input, d.options::jsonb,
          d.options::jsonb->>'concurrencyKey', coalesce((d.options::jsonb->>'priority')::smallint, 3), d.policies::jsonb, d.is_event, d.span_id, $12
   FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bool[], $11::text[])
     AS d(pipeline_id, application_id, position, name, handler_name, description, input, options, policies, is_event, span_id)
   ORDER BY d.pipeline_id, d.position
   RETURNING id, pipeline_id, position`,
  { plan: 'custom' },
);

/** Inserts stages (worker appends); returns their ids by (pipelineId, position). */
export async function insertPassStages(tx: Queryable, stages: readonly NewStageRow[], now: Date): Promise<Map<string, number>> {
  const rows = await tx.query<{ id: string; pipeline_id: string; position: number }>(INSERT_STAGES, [
    stages.map((s) => s.pipelineId),
    stages.map((s) => s.applicationId),
    stages.map((s) => s.position),
    stages.map((s) => s.name),
    stages.map((s) => s.handlerName),
    stages.map((s) => s.description),
    stages.map((s) => s.input),
    stages.map((s) => JSON.stringify(s.options)),
    stages.map((s) => (s.policies === null || s.policies === undefined ? null : JSON.stringify(s.policies))),
    stages.map((s) => s.isEvent),
    stages.map((s) => s.spanId),
    now,
  ]);
  return new Map(rows.map((r) => [`${r.pipeline_id}:${r.position}`, Number(r.id)]));
}

/** §5.2: worker-appended stages go at the end of the pipeline, re-checked at apply time. */
export function appendWorkerStages(b: Batch, 
  stage: PassStage,
  items: NonNullable<StageResultMessage['result']['appendedStages']>,
  logs: { message: string; logLevel: string; created: Date }[],
): void {
  if (items.length === 0) return;
  const existing = b.stages.get(stage.pipelineId)!;
  const pending = b.appended.filter((a) => a.pipelineId === stage.pipelineId);
  const names = [...existing.map((s) => s.name), ...pending.map((a) => a.name)];
  const added = items.map((item) => stageFromInfo(item, b.pipelines.get(stage.pipelineId)!.priority));
  const errors = checkAddedStages(names, added, '/appendedStages');
  if (errors.length > 0) {
    logs.push({ message: `Appended stages refused: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, logLevel: 'Warning', created: b.now });
    return;
  }
  added.forEach((s, i) =>
    b.appended.push({
      pipelineId: stage.pipelineId,
      applicationId: stage.applicationId,
      position: existing.length + pending.length + i,
      ...stageItem(s),
    }),
  );
}

/** Adds the inserted worker-appended stages (ids by `pipelineId:position`) to their pipelines, NotStarted. */
export function addAppended(b: Batch, ids: Map<string, number>): void {
  for (const a of b.appended) {
    const id = ids.get(`${a.pipelineId}:${a.position}`);
    if (id === undefined) throw new Error(`appended stage ${a.pipelineId}:${a.position} was not inserted`);
    const stage: PassStage = {
      id,
      pipelineId: a.pipelineId,
      applicationId: a.applicationId,
      position: a.position,
      name: a.name,
      handlerName: a.handlerName,
      status: 'NotStarted',
      options: a.options,
      spanId: a.spanId,
      attempt: 0,
      retryAttempt: 0,
      failureCount: 0,
      lastErrorCode: null,
      lastFailedAt: null,
      failureDisposition: null,
      nextRetryAt: null,
      finishedAt: null,
      currentExecutionId: null,
      execution: null,
    };
    b.stages.get(a.pipelineId)!.push(stage);
    b.stageById.set(id, stage);
  }
}
