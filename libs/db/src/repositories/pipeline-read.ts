import { statement, type Queryable } from '../sql.js';
import { STORED_PIPELINE_JSON, pipelineRecord, type PipelineJson, type PipelineRecord } from './pipeline-view.js';

/**
 * Pipeline reads of the API, each ONE statement (decision 0070): the pipeline, its stages with
 * their logs, context and keywords come from one snapshot, so a reading never mixes moments (a
 * stage WaitingForApproval in a pipeline still Running).
 */

const READ = statement('pipeline_read', `SELECT ${STORED_PIPELINE_JSON} AS pipeline FROM pipelines p WHERE p.id = $1::bigint`);

const READ_BY_KEY = statement(
  'pipeline_read_by_key',
  `SELECT k.intent_hash, ${STORED_PIPELINE_JSON} AS pipeline
   FROM idempotency_keys k JOIN pipelines p ON p.id = k.pipeline_id
   WHERE k.application_id = $1::int AND k.key = $2::text`,
);

/** The pipeline as a PipelineResponse shows it; ownership is the caller's check. */
export async function readPipeline(db: Queryable, pipelineId: number): Promise<PipelineRecord | null> {
  const [row] = await db.query<{ pipeline: PipelineJson }>(READ, [pipelineId]);
  return row ? pipelineRecord(row.pipeline) : null;
}

/** The binding of an application's idempotency key and its pipeline, read together. */
export async function readPipelineByKey(
  db: Queryable,
  applicationId: number,
  key: string,
): Promise<{ intentHash: string; pipeline: PipelineRecord } | null> {
  const [row] = await db.query<{ intent_hash: string; pipeline: PipelineJson }>(READ_BY_KEY, [applicationId, key]);
  return row ? { intentHash: row.intent_hash, pipeline: pipelineRecord(row.pipeline) } : null;
}
