import type { ScheduleRun, ScheduleTriggerRequest } from '@po/contracts';
import { inSavepoint, insertPipeline, insertRun, lockScheduleByName, readRunWithPipeline } from '@po/db';
import { NotFound, inputString, planPipeline, type PipelineDefinitionInput } from '@po/domain';
import { announce, type Deps } from '../deps.js';
import { pipelineResponse, type PipelineResponse } from '../pipelines/view.js';
import { ScheduleArchived } from './plan.js';
import { runResponse } from './view.js';

/**
 * The stored definition with the first stage's input replaced (addendum §5.7); null/omitted keeps
 * it. Trigger and backfill share it.
 */
export function definitionWithInput(definition: PipelineDefinitionInput, input: unknown): PipelineDefinitionInput {
  if (input === undefined || input === null) return definition;
  const [first, ...rest] = definition.stages;
  if (!first) return definition;
  return { ...definition, stages: [{ ...first, input: inputString(input) }, ...rest] };
}

/**
 * POST /schedules/{name}/trigger (addendum §14.7): not Archived (Paused included) → the pipeline
 * is created from the current definition through the creation path of the API and a Manual run
 * records it. Overlap and catch-up do not apply; nextRunAt and the plan are untouched. When
 * creation fails the run is recorded as Failed and the request fails (500).
 */
export async function triggerSchedule(
  deps: Deps,
  applicationId: number,
  name: string,
  body: ScheduleTriggerRequest,
): Promise<{ run: ScheduleRun; pipeline: PipelineResponse }> {
  const now = deps.clock();
  const outcome = await deps.db.$transaction(async (tx) => {
    const schedule = await lockScheduleByName(tx, applicationId, name);
    if (!schedule) throw new NotFound(`Schedule "${name}" not found.`);
    if (schedule.status === 'Archived') throw new ScheduleArchived(schedule.name);
    const definition = definitionWithInput(schedule.definition as unknown as PipelineDefinitionInput, body.input);
    const planned = planPipeline(definition, { applicationId, scheduleId: schedule.id });
    const created = planned.ok
      ? await inSavepoint(tx, () => insertPipeline(tx, planned.pipeline, now))
      : { ok: false as const, error: new Error(planned.errors.map((e) => `${e.field} ${e.message}`).join('; ')) };
    const run = {
      scheduleId: schedule.id,
      applicationId,
      trigger: 'Manual' as const,
      scheduledFor: now,
      tick: null,
      createdAt: now,
      ...(created.ok
        ? { status: 'Created' as const, pipelineId: created.value, reason: null }
        : { status: 'Failed' as const, pipelineId: null, reason: `creation_failed: ${errorText(created.error)}` }),
    };
    const runId = await insertRun(tx, run);
    if (runId === null) throw new Error('the manual run was not recorded');
    return { runId, pipelineId: run.pipelineId, error: created.ok ? null : created.error };
  });
  if (outcome.pipelineId === null) throw new Error(`manual run ${outcome.runId} of schedule "${name}" failed`, { cause: outcome.error });
  await announce(deps, { type: 'pipeline.created', applicationId, pipelineId: outcome.pipelineId });
  // One statement: the run's pipelineStatus and the pipeline are the same moment.
  const read = await readRunWithPipeline(deps.sql, outcome.runId);
  if (!read?.pipeline) throw new Error(`manual run ${outcome.runId} vanished after creation`);
  return { run: runResponse(read.run), pipeline: pipelineResponse(read.pipeline) };
}

const errorText = (err: unknown): string => (err instanceof Error ? (err.message.split('\n')[0] ?? 'error') : 'unknown error');
