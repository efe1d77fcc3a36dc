import {
  cancelPipelineInTransaction,
  claimTick,
  countQueuedRuns,
  inSavepoint,
  insertPipeline,
  oldestQueuedRun,
  settleRun,
  unfinishedPipelinesOfSchedule,
  type DbOrTx,
  type ScheduleRecord,
} from '@po/db';
import { decideOverlap, planPipeline, type OverlapPolicy, type PipelineDefinitionInput } from '@po/domain';
import type { Announcement } from './deps.js';

/** Writes of one schedule's transaction, and the events to publish once it commits. */
export interface FireContext {
  tx: DbOrTx;
  schedule: ScheduleRecord;
  now: Date;
  announcements: Announcement[];
}

type Creation = { ok: true; pipelineId: number } | { ok: false; reason: string };

/**
 * Creates the schedule's pipeline through the one creation path of the product (planPipeline +
 * insertPipeline, due for dispatch at once). Under a savepoint: a failure rolls back only the
 * pipeline, and the run records it as Failed.
 */
async function createPipeline(ctx: FireContext): Promise<Creation> {
  const { schedule } = ctx;
  const planned = planPipeline(schedule.definition as PipelineDefinitionInput, { applicationId: schedule.applicationId, scheduleId: schedule.id });
  if (!planned.ok) return { ok: false, reason: `creation_failed: ${planned.errors.map((e) => `${e.field} ${e.message}`).join('; ')}` };
  const created = await inSavepoint(ctx.tx, () => insertPipeline(ctx.tx, planned.pipeline, ctx.now));
  if (!created.ok) return { ok: false, reason: `creation_failed: ${created.error instanceof Error ? created.error.message.split('\n')[0] : 'unknown error'}` };
  ctx.announcements.push({ type: 'pipeline.created', applicationId: schedule.applicationId, pipelineId: created.value });
  return { ok: true, pipelineId: created.value };
}

async function createAndSettle(ctx: FireContext, runId: number, reason: string | null): Promise<'created' | 'failed'> {
  const creation = await createPipeline(ctx);
  if (creation.ok) {
    await settleRun(ctx.tx, runId, { status: 'Created', pipelineId: creation.pipelineId, reason });
    return 'created';
  }
  await settleRun(ctx.tx, runId, { status: 'Failed', pipelineId: null, reason: creation.reason });
  return 'failed';
}

export type TickOutcome = 'created' | 'failed' | 'skipped' | 'queued' | 'already_fired';

/**
 * Fires one planned tick (addendum §14.5): claims it (a tick that already has a run is never
 * fired again), then applies the overlap policy. The schedule overlaps while any pipeline of an
 * earlier run, whatever its trigger, is not terminal.
 */
export async function fireTick(ctx: FireContext, tick: Date, trigger: 'Scheduled' | 'Catchup'): Promise<TickOutcome> {
  const { tx, schedule, now } = ctx;
  const runId = await claimTick(tx, { scheduleId: schedule.id, applicationId: schedule.applicationId, trigger, tick, now });
  if (runId === null) return 'already_fired';
  const open = await unfinishedPipelinesOfSchedule(tx, schedule.id);
  const policy = schedule.overlapPolicy as OverlapPolicy;
  const queued = open.length > 0 && policy === 'Queue' ? await countQueuedRuns(tx, schedule.id) : 0;
  const decision = decideOverlap(policy, open.length > 0, queued, schedule.catchupMax);
  switch (decision.action) {
    case 'skip':
      await settleRun(tx, runId, { status: 'Skipped', pipelineId: null, reason: decision.reason });
      return 'skipped';
    case 'queue':
      await settleRun(tx, runId, { status: 'Queued', pipelineId: null, reason: decision.reason });
      return 'queued';
    case 'create':
      return createAndSettle(ctx, runId, null);
    case 'replace': {
      let newestCancelled: number | null = null;
      for (const pipelineId of open) {
        if (await cancelPipelineInTransaction(tx, pipelineId, now)) {
          newestCancelled = pipelineId;
          ctx.announcements.push({ type: 'pipeline.cancelled', applicationId: schedule.applicationId, pipelineId });
        }
      }
      return createAndSettle(ctx, runId, newestCancelled === null ? null : `replaced:${newestCancelled}`);
    }
  }
}

/**
 * Queue (addendum §14.5): once no pipeline of the schedule is unfinished, the oldest Queued run
 * gets its pipeline and becomes Created. One at a time: its pipeline is the new overlap.
 */
export async function promoteQueuedRun(ctx: FireContext): Promise<boolean> {
  const run = await oldestQueuedRun(ctx.tx, ctx.schedule.id);
  if (!run) return false;
  if ((await unfinishedPipelinesOfSchedule(ctx.tx, ctx.schedule.id)).length > 0) return false;
  await createAndSettle(ctx, run.id, null);
  return true;
}
