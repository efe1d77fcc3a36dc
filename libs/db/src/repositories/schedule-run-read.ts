import { statement, type Queryable } from '../sql.js';
import { STORED_PIPELINE_JSON, pipelineRecord, type PipelineJson, type PipelineRecord } from './pipeline-view.js';
import { toRun, type RawRun, type ScheduleRunRecord } from './schedule-runs.js';

const RUN_WITH_PIPELINE = statement(
  'schedule_run_with_pipeline',
  `SELECT r.id, r.schedule_id, r.trigger, r.status, r.scheduled_for, r.created_at, r.pipeline_id,
          p.status::text AS pipeline_status, r.reason,
          CASE WHEN p.id IS NULL THEN NULL ELSE ${STORED_PIPELINE_JSON} END AS pipeline
   FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id
   WHERE r.id = $1::bigint`,
);

interface RawRunWithPipeline extends RawRun {
  pipeline: PipelineJson | null;
}

/** A run and its pipeline in one statement (the response of a manual trigger). */
export async function readRunWithPipeline(
  db: Queryable,
  runId: number,
): Promise<{ run: ScheduleRunRecord; pipeline: PipelineRecord | null } | null> {
  const [r] = await db.query<RawRunWithPipeline>(RUN_WITH_PIPELINE, [runId]);
  if (!r) return null;
  return {
    run: toRun(r),
    pipeline: r.pipeline === null ? null : pipelineRecord(r.pipeline),
  };
}
