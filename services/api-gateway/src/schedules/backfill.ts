import { toUtcMillis, type OverlapPolicy, type ScheduleBackfillRequest, type ScheduleBackfillResponse } from '@po/contracts';
import {
  backfillRunsAt,
  backfilledTicks,
  cancelPipelineInTransaction,
  inSavepoint,
  insertBackfillRuns,
  insertPipeline,
  lockScheduleByName,
  queuedRunCounts,
  unfinishedPipelines,
  type DbOrTx,
  type NewBackfillRun,
  type ScheduleRecord,
  type ScheduleRunStatus,
} from '@po/db';
import {
  BACKFILL_MAX_TICKS,
  NotFound,
  ValidationFailed,
  backfillTicks,
  decideOverlap,
  planPipeline,
  type PipelineDefinitionInput,
} from '@po/domain';
import type { PipelineEvent } from '@po/queues';
import { announce, type Deps } from '../deps.js';
import { NotPlannable, ScheduleArchived, planOf } from './plan.js';
import { definitionWithInput } from './trigger.js';
import { runResponse } from './view.js';

/** Up to 1,000 pipelines with a savepoint each: more than Prisma's default 5 s must be allowed. */
const TX_OPTIONS = { timeout: 60_000, maxWait: 10_000 };

type Announcement = Omit<PipelineEvent, 'at'>;

const firstLine = (err: unknown): string => (err instanceof Error ? (err.message.split('\n')[0] ?? 'error') : 'unknown error');

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
 * The new ticks, oldest first, through the overlap policy exactly as the scheduler fires a tick
 * (addendum §14.5): the schedule overlaps while any pipeline of an earlier run, whatever its
 * trigger, is not terminal. Skip → Skipped (`overlap`); Queue → Queued while fewer than catchupMax
 * are (the scheduler promotes them), else Skipped (`queue_full`); Replace → every unfinished
 * pipeline cancelled as POST cancel does, then Created (`replaced:{id}`); Allow → Created. A
 * Paused schedule holds no Queued runs (pausing skips them), so there a queued tick is Skipped
 * (`paused`). A pipeline that cannot be created makes the run Failed (`creation_failed: …`).
 */
async function fireTicks(
  tx: DbOrTx,
  schedule: ScheduleRecord,
  ticks: readonly Date[],
  options: { policy: OverlapPolicy; input: unknown; now: Date },
  announcements: Announcement[],
): Promise<NewBackfillRun[]> {
  const { applicationId, id: scheduleId } = schedule;
  const definition = definitionWithInput(schedule.definition as unknown as PipelineDefinitionInput, options.input);
  const open = (await unfinishedPipelines(tx, [scheduleId])).get(scheduleId) ?? [];
  let queued = options.policy === 'Queue' ? ((await queuedRunCounts(tx, [scheduleId])).get(scheduleId) ?? 0) : 0;
  const runs: NewBackfillRun[] = [];
  const record = (tick: Date, status: ScheduleRunStatus, pipelineId: number | null, reason: string | null) =>
    runs.push({ scheduleId, applicationId, tick, status, pipelineId, reason, createdAt: options.now });

  const create = async (tick: Date, reason: string | null) => {
    const planned = planPipeline(definition, { applicationId, scheduleId });
    if (!planned.ok) return record(tick, 'Failed', null, `creation_failed: ${planned.errors.map((e) => `${e.field} ${e.message}`).join('; ')}`);
    const created = await inSavepoint(tx, () => insertPipeline(tx, planned.pipeline, options.now));
    if (!created.ok) return record(tick, 'Failed', null, `creation_failed: ${firstLine(created.error)}`);
    open.push(created.value);
    announcements.push({ type: 'pipeline.created', applicationId, pipelineId: created.value });
    return record(tick, 'Created', created.value, reason);
  };

  for (const tick of ticks) {
    const decision = decideOverlap(options.policy, open.length > 0, queued, schedule.catchupMax);
    switch (decision.action) {
      case 'skip':
        record(tick, 'Skipped', null, decision.reason);
        break;
      case 'queue':
        if (schedule.status === 'Paused') {
          record(tick, 'Skipped', null, 'paused');
        } else {
          queued += 1;
          record(tick, 'Queued', null, decision.reason);
        }
        break;
      case 'create':
        await create(tick, null);
        break;
      case 'replace': {
        let newest: number | null = null;
        for (const pipelineId of open.splice(0)) {
          if (!(await cancelPipelineInTransaction(tx, pipelineId, options.now))) continue;
          newest = pipelineId;
          announcements.push({ type: 'pipeline.cancelled', applicationId, pipelineId });
        }
        await create(tick, newest === null ? null : `replaced:${newest}`);
        break;
      }
    }
  }
  return runs;
}

/**
 * POST /schedules/{name}/backfill (issue 11, decision 0087): one run with trigger Backfill per
 * tick of the schedule in [from, to), idempotent per tick. Under the schedule's row lock, which
 * every writer of its runs takes first, so two identical requests serialise and the second finds
 * every tick done. Archived → 409; Paused is allowed, as for trigger. The schedule's own plan
 * (planAnchor, nextTickAt, nextRunAt) is not written: a Backfill run claims no tick of it.
 * Pipelines are created now (no jitter) and announced after commit.
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
    const done = await backfilledTicks(tx, schedule.id, ticks);
    const fresh = ticks.filter((t) => !done.has(t.getTime()));
    const runs = fresh.length > 0 ? await fireTicks(tx, schedule, fresh, { policy, input: body.input, now }, announcements) : [];
    const inserted = await insertBackfillRuns(tx, runs);
    // Not reachable while every backfill holds the row lock; refuse rather than leave a pipeline without its run.
    if (inserted !== runs.length) throw new Error(`backfill of schedule ${schedule.id}: ${runs.length - inserted} ticks were recorded concurrently`);
    return { scheduleId: schedule.id, ticks: ticks.length, created: inserted, runs: await backfillRunsAt(tx, schedule.id, ticks) };
  }, TX_OPTIONS);
  await Promise.all(announcements.map((event) => announce(deps, event)));
  if (outcome.created > 0) {
    deps.logger.info({ scheduleId: outcome.scheduleId, ticks: outcome.ticks, created: outcome.created, from: from.toISOString(), to: to.toISOString() }, 'schedule backfilled');
  }
  return { ticks: outcome.ticks, created: outcome.created, runs: outcome.runs.map(runResponse) };
}
