import type { OverlapPolicy, ScheduleRun, ScheduleTriggerRequest } from '@po/contracts';
import { lockScheduleByName, queryableOf, readRunWithPipeline } from '@po/db';
import { fireScheduleTicks, planDefinition } from '@po/engine';
import { NotFound, inputString, type PipelineDefinitionInput } from '@po/domain';
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
 * is created from the current definition as every fired tick is (fireScheduleTicks: a Manual tick)
 * and a Manual run records it. Overlap and catch-up do not apply; nextRunAt and the plan are
 * untouched. When creation fails the run is recorded as Failed and the request fails (500).
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
    const { fired } = await fireScheduleTicks(
      queryableOf(tx),
      [
        {
          schedule,
          rules: { policy: schedule.overlapPolicy as OverlapPolicy, catchupMax: schedule.catchupMax },
          open: 0,
          queued: 0,
          ticks: [{ trigger: 'Manual', tick: now }],
          definition: () => planDefinition(schedule, definition),
        },
      ],
      { now, clock: () => now, isolate: true },
    );
    const tick = fired[0]?.ticks[0];
    if (!tick || tick.runId === null) throw new Error('the manual run was not recorded');
    return { runId: tick.runId, pipelineId: tick.pipeline?.id ?? null, reason: tick.reason };
  });
  if (outcome.pipelineId === null) throw new Error(`manual run ${outcome.runId} of schedule "${name}" failed: ${outcome.reason}`);
  await announce(deps, { type: 'pipeline.created', applicationId, pipelineId: outcome.pipelineId });
  // One statement: the run's pipelineStatus and the pipeline are the same moment.
  const read = await readRunWithPipeline(deps.sql, outcome.runId);
  if (!read?.pipeline) throw new Error(`manual run ${outcome.runId} vanished after creation`);
  return { run: runResponse(read.run), pipeline: pipelineResponse(read.pipeline) };
}
