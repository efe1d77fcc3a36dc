// Rows the handler tests read, written directly: stages in a status with their current execution,
// and workers with their registered handlers.
import { randomUUID } from 'node:crypto';
import type { Gateway } from './harness.js';

/** A pipeline of the application; its id. */
export async function seedPipeline(gw: Gateway, applicationId: number): Promise<number> {
  const [row] = await gw.db.$queryRawUnsafe<{ id: bigint }[]>(
    `INSERT INTO pipelines (application_id, name, trace_id, status, dispatched)
     VALUES ($1, 'p', md5(random()::text), 'Running', true) RETURNING id`,
    applicationId,
  );
  return Number(row!.id);
}

let position = 0;

/**
 * A stage of `handler` in `status`, created `ageSeconds` ago by the database clock; a Pending or
 * Running one has a current execution dispatched `dispatchedSecondsAgo` ago. Its id.
 */
export async function seedStage(
  gw: Gateway,
  applicationId: number,
  pipelineId: number,
  handler: string,
  status: 'Throttled' | 'Pending' | 'Running' | 'Completed' | 'NotStarted',
  times: { ageSeconds?: number; dispatchedSecondsAgo?: number } = {},
): Promise<number> {
  const executionId = status === 'Pending' || status === 'Running' ? randomUUID() : null;
  const [row] = await gw.db.$queryRawUnsafe<{ id: bigint }[]>(
    `INSERT INTO stages (pipeline_id, application_id, position, name, handler_name, options, span_id, status, created_at, current_execution_id)
     VALUES ($1, $2, $3::int, 's' || $3::int, $4, '{}'::jsonb, '0000000000000001', $5::"StageStatus", now() - make_interval(secs => $6::float8), $7::uuid)
     RETURNING id`,
    pipelineId,
    applicationId,
    position++,
    handler,
    status,
    times.ageSeconds ?? 0,
    executionId,
  );
  if (executionId !== null)
    await gw.db.$executeRawUnsafe(
      `INSERT INTO stage_executions (id, stage_id, application_id, attempt, dispatched_at)
       VALUES ($1::uuid, $2, $3, 1, now() - make_interval(secs => $4::float8))`,
      executionId,
      row!.id,
      applicationId,
      times.dispatchedSecondsAgo ?? 0,
    );
  return Number(row!.id);
}

export async function seedWorker(gw: Gateway, applicationId: number, handlers: string[], status: 'Active' | 'Stopped' = 'Active'): Promise<void> {
  await gw.db.$executeRawUnsafe(
    `INSERT INTO workers (id, application_id, instance_id, handlers, status)
     VALUES ($1, $2, $1, $3::text[], $4::"WorkerStatus")`,
    randomUUID(),
    applicationId,
    handlers,
    status,
  );
}
