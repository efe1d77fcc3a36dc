import type { NewStage, PipelineStatus } from '@po/domain';
import { statement, type Queryable } from '../sql.js';

/**
 * What POST /pipelines/{id}/rerun repeats of a pipeline (decision 0089): its definition as it was
 * created, read under a lock that keeps retention from deleting it until the rerun commits.
 */

// FOR KEY SHARE conflicts with the DELETE and the FOR UPDATE of a retention batch (which then
// skips the pipeline), not with the engine's updates of a pipeline that is not terminal yet.
const LOCK = statement(
  'pipeline_rerun_lock',
  `SELECT application_id, status::text AS status FROM pipelines WHERE id = $1::bigint FOR KEY SHARE`,
);

/**
 * A statement of its own after the lock, so its snapshot sees everything committed before the
 * pipeline became terminal. $2 is where the rerun starts (decision 0133).
 *
 * From the start: the definition as created. The creation statement writes the pipeline, its
 * stages and its context with one instant, so "as created" is: the stages whose created_at is the
 * pipeline's (an append, by a client or a worker, comes later and goes after them), and the
 * context items whose updated_at still is (a result that changed or added a key wrote its own
 * instant; a deleted key has no row).
 *
 * From the failure: every stage, appended ones too (the stages that appended them are carried
 * over and will not append them again), and the context as the run left it (what the carried-over
 * stages wrote is what the stages after them read).
 *
 * Sensitive values are not read: the creation statement copies them.
 */
const SOURCE = statement(
  'pipeline_rerun_source',
  `SELECT p.name, p.policies, p.priority,
     (SELECT coalesce(json_agg(json_build_object(
               'name', s.name, 'handlerName', s.handler_name, 'description', s.description, 'input', s.input,
               'options', s.options, 'policies', s.policies, 'isEvent', s.is_event,
               'sourceId', s.id, 'completed', s.status = 'Completed') ORDER BY s.position), '[]'::json)
      FROM stages s WHERE s.pipeline_id = p.id AND ($2::text = 'failed' OR s.created_at = p.created_at)) AS stages,
     (SELECT coalesce(json_agg(json_build_object(
               'key', c.key, 'value', CASE WHEN c.is_sensitive THEN NULL ELSE c.value END, 'valueType', c.value_type,
               'isSensitive', c.is_sensitive) ORDER BY c.id), '[]'::json)
      FROM context_items c WHERE c.pipeline_id = p.id AND ($2::text = 'failed' OR c.updated_at = p.created_at)) AS context,
     (SELECT coalesce(json_agg(json_build_object('key', k.key, 'value', k.value) ORDER BY k.id), '[]'::json)
      FROM pipeline_keywords k WHERE k.pipeline_id = p.id) AS keywords
   FROM pipelines p WHERE p.id = $1::bigint`,
);

export interface RerunSource {
  name: string;
  policies: Record<string, unknown>[] | null;
  priority: number;
  /**
   * In position order, options as stored (normalised): from the start the stages the pipeline was
   * created with, from the failure every stage, each with its id and whether it Completed.
   */
  stages: (NewStage & { sourceId: number; completed: boolean })[];
  /** Context items still as created, in creation order; a sensitive item's value is null (not read). */
  context: { key: string; value: string | null; valueType: string | null; isSensitive: boolean }[];
  keywords: { key: string; value: string }[];
}

/**
 * Locks a pipeline against deletion for the caller's transaction; its application and status, or
 * null when there is no such pipeline.
 */
export async function lockPipelineForRerun(
  tx: Queryable,
  pipelineId: number,
): Promise<{ applicationId: number; status: PipelineStatus } | null> {
  const [row] = await tx.query<{ application_id: number; status: PipelineStatus }>(LOCK, [pipelineId]);
  return row ? { applicationId: row.application_id, status: row.status } : null;
}

/** Where a rerun starts: the first stage, or the failure (decision 0133). */
export type RerunFrom = 'start' | 'failed';

/** The definition a rerun repeats; read after lockPipelineForRerun, in the same transaction. */
export async function readRerunSource(tx: Queryable, pipelineId: number, from: RerunFrom = 'start'): Promise<RerunSource | null> {
  const [row] = await tx.query<RerunSource>(SOURCE, [pipelineId, from]);
  return row ?? null;
}
