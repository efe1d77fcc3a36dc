import { toUtcMillis, type OverlapPolicy, type ScheduleBackfillRequest, type ScheduleBackfillResponse } from '@po/contracts';
import { backfillRunsAt, lockScheduleByName, queryableOf, scheduleOverlap, type ScheduleRecord } from '@po/db';
import { fireScheduleTicks, planDefinition } from '@po/engine';
import { cancelPipeline as cancelPipelineInTransaction } from '@po/engine';
import { BACKFILL_MAX_TICKS, NotFound, ValidationFailed, backfillTicks, type PipelineDefinitionInput } from '@po/domain';
import type { PipelineEvent } from '@po/queues';
import { announce, type Deps } from '../deps.js';
import { NotPlannable, ScheduleArchived, planOf } from './plan.js';
import { definitionWithInput } from './trigger.js';
import { runResponse } from './view.js';

/** Up to 1,000 ticks, and under Replace as many cancellations: more than Prisma's default 5 s must be allowed. */
const TX_OPTIONS = { timeout: 60_000, maxWait: 10_000 };

type Announcement = Omit<PipelineEvent, 'at'>;

/** The ticks of the schedule in [from, to), or the 400 that says why there is no list. */
function ticksOf(schedule: ScheduleRecord, from: Date, to: Date): Date[] {
  const result = backfillTicks(planOf(schedule), schedule.planAnchor, from, to, BACKFILL_MAX_TICKS);
  if (result.ok) return result.ticks;
  if (result.reason === 'not_plannable') throw new NotPlannable(schedule.name, 'its plan cannot be computed');
  throw ValidationFailed.at(
    '/to',
    `the range [from, to) holds ${result.exact ? '' : 'at least '}${result.count} ticks of the schedule; a backfill covers at most ${BACKFILL_MAX_TICKS}: split the range`,
  );
}

/**
 * POST /schedules/{name}/backfill (issue 11, decision 0087): one run with trigger Backfill per
 * tick of the schedule in [from, to), idempotent per tick. Under the schedule's row lock, which
 * every writer of its runs takes first, so two identical requests serialise and the second finds
 * every tick done. Archived → 409; Paused is allowed, as for trigger. The schedule's own plan
 * (planAnchor, nextTickAt, nextRunAt) is not written: a Backfill run claims no tick of it.
 * Overlap applies tick by tick, oldest first, as when the scheduler fires (fireScheduleTicks),
 * counting every unfinished pipeline of the schedule. Pipelines are created now (no jitter) and
 * announced after commit.
 */
export async function backfillSchedule(
  deps: Deps,
  applicationId: number,
  name: string,
  body: ScheduleBackfillRequest,
): Promise<ScheduleBackfillResponse> {
  const from = new Date(toUtcMillis(body.from));
  const to = new Date(toUtcMillis(body.to));
  const now = deps.clock();
  const announcements: Announcement[] = [];
  const outcome = await deps.db.$transaction(async (tx) => {
    const schedule = await lockScheduleByName(tx, applicationId, name);
    if (!schedule) throw new NotFound(`Schedule "${name}" not found.`);
    if (schedule.status === 'Archived') throw new ScheduleArchived(schedule.name);
    const policy = body.overlapPolicy ?? (schedule.overlapPolicy as OverlapPolicy);
    if (body.input !== undefined && policy === 'Queue') {
      throw ValidationFailed.at('/input', 'cannot be used with overlapPolicy Queue: a Queued run gets its pipeline later, from the stored definition');
    }
    const ticks = ticksOf(schedule, from, to);
    let created = 0;
    if (ticks.length > 0) {
      const { open, queued } = await scheduleOverlap(tx, schedule.id, policy);
      const definition = definitionWithInput(schedule.definition as unknown as PipelineDefinitionInput, body.input);
      const { fired } = await fireScheduleTicks(
        queryableOf(tx),
        [
          {
            schedule,
            rules: { policy, catchupMax: schedule.catchupMax, paused: schedule.status === 'Paused' },
            open,
            queued,
            ticks: ticks.map((tick) => ({ trigger: 'Backfill' as const, tick })),
            definition: () => planDefinition(schedule, definition),
          },
        ],
        // A tick with a Backfill run already is left alone: the request is idempotent per tick.
        { now, clock: () => now, cancel: (pipelineId) => cancelPipelineInTransaction(tx, pipelineId, now), isolate: true, skipFired: true },
      );
      for (const tick of fired.flatMap((f) => f.ticks)) {
        if (tick.outcome !== 'already_fired') created += 1;
        for (const pipelineId of tick.cancelled) announcements.push({ type: 'pipeline.cancelled', applicationId, pipelineId });
        if (tick.pipeline) announcements.push({ type: 'pipeline.created', applicationId, pipelineId: tick.pipeline.id });
      }
    }
    return { scheduleId: schedule.id, ticks: ticks.length, created, runs: await backfillRunsAt(tx, schedule.id, ticks) };
  }, TX_OPTIONS);
  await Promise.all(announcements.map((event) => announce(deps, event)));
  if (outcome.created > 0) {
    deps.logger.info({ scheduleId: outcome.scheduleId, ticks: outcome.ticks, created: outcome.created, from: from.toISOString(), to: to.toISOString() }, 'schedule backfilled');
  }
  return { ticks: outcome.ticks, created: outcome.created, runs: outcome.runs.map(runResponse) };
}
