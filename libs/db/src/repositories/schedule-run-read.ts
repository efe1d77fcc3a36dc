import type { PipelineStatus } from '@po/domain';
import { statement, type Queryable } from '../sql.js';
import { STORED_PIPELINE_JSON, pipelineRecord, type PipelineJson, type PipelineRecord } from './pipeline-view.js';
import type { ScheduleRunRecord, ScheduleRunStatus, ScheduleRunTrigger } from './schedules.js';

const RUN_WITH_PIPELINE = statement(
  'schedule_run_with_pipeline',
  `SELECT r.id, r.schedule_id, r.trigger, r.status, r.scheduled_for, r.created_at, r.pipeline_id,
          p.status::text AS pipeline_status, r.reason,
          CASE WHEN p.id IS NULL THEN NULL ELSE ${STORED_PIPELINE_JSON} END AS pipeline
   FROM schedule_runs r LEFT JOIN pipelines p ON p.id = r.pipeline_id
   WHERE r.id = $1::bigint`,
);

interface RawRunWithPipeline {
  /** int8 columns come as text from pg. */
  id: string;
  schedule_id: string;
  trigger: ScheduleRunTrigger;
  status: ScheduleRunStatus;
  scheduled_for: Date;
  created_at: Date;
  pipeline_id: string | null;
  pipeline_status: PipelineStatus | null;
  reason: string | null;
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
    run: {
      id: Number(r.id),
      scheduleId: Number(r.schedule_id),
      trigger: r.trigger,
      status: r.status,
      scheduledFor: r.scheduled_for,
      createdAt: r.created_at,
      pipelineId: r.pipeline_id === null ? null : Number(r.pipeline_id),
      pipelineStatus: r.pipeline_status,
      reason: r.reason,
    },
    pipeline: r.pipeline === null ? null : pipelineRecord(r.pipeline),
  };
}
