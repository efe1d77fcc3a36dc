import {
  cancelPipelineInTransaction,
  inSavepoint,
  insertPipeline,
  insertRun,
  oldestQueuedRun,
  scheduleDefinition,
  settleRun,
  type DbOrTx,
  type SchedulePlanRecord,
  type ScheduleRunStatus,
} from '@po/db';
import { decideOverlap, planPipeline, type OverlapPolicy, type PipelineDefinitionInput } from '@po/domain';
import { ATTR_SCHEDULE_NAME, startPipelineSpan, traceparentOf, tracingEnabled } from '@po/telemetry';
import type { Announcement } from './deps.js';

/**
 * One schedule inside a guarded fire transaction (the fallback of the set-based batch, and Queue
 * promotion). `open` (its unfinished pipelines) and `queued` (its Queued runs) are read once per
 * transaction and kept current as ticks create, cancel and queue.
 */
export interface FireContext {
  tx: DbOrTx;
  schedule: SchedulePlanRecord;
  /**
   * The schedule's definition, read by the first tick that creates a pipeline and kept for its
   * other ticks. It lives as long as this context, one schedule, so a guarded transaction holds at
   * most one definition at a time.
   */
  definition?: unknown;
  /** The instant the transaction handles ticks at (due, missed, run createdAt). */
  now: Date;
  /** Read when a pipeline is written: its createdAt is when it was created, not when the transaction began. */
  clock: () => Date;
  open: number[];
  queued: number;
  announcements: Announcement[];
}

type Creation = { ok: true; pipelineId: number } | { ok: false; reason: string };

const firstLine = (err: unknown): string => (err instanceof Error ? (err.message.split('\n')[0] ?? 'error') : 'unknown error');

/**
 * The pipeline.created announcement of a scheduled pipeline. With tracing on, the pipeline's trace
 * opens with a `schedule.fire` span (its stages' spans are its children), linked from the event.
 */
export function createdAnnouncement(schedule: Pick<SchedulePlanRecord, 'applicationId' | 'name'>, pipelineId: number, traceId: string, at: Date): Announcement {
  const span = tracingEnabled()
    ? startPipelineSpan('schedule.fire', { traceId, applicationId: schedule.applicationId, id: pipelineId }, at.getTime(), { [ATTR_SCHEDULE_NAME]: schedule.name })
    : undefined;
  span?.end();
  return { type: 'pipeline.created', applicationId: schedule.applicationId, pipelineId, traceparent: span && traceparentOf(span) };
}

/**
 * Creates the schedule's pipeline through the one creation path of the product (planPipeline +
 * insertPipeline, due for dispatch at once; pipeline.created is published after commit), under a
 * savepoint: a creation the database refuses becomes a failed creation, not a failed transaction.
 */
async function createPipeline(ctx: FireContext): Promise<Creation> {
  const { schedule, tx } = ctx;
  ctx.definition ??= await scheduleDefinition(tx, schedule.id);
  const now = ctx.clock();
  const planned = planPipeline(ctx.definition as PipelineDefinitionInput, { applicationId: schedule.applicationId, scheduleId: schedule.id });
  if (!planned.ok) return { ok: false, reason: `creation_failed: ${planned.errors.map((e) => `${e.field} ${e.message}`).join('; ')}` };
  const created = await inSavepoint(tx, () => insertPipeline(tx, planned.pipeline, now));
  if (!created.ok) return { ok: false, reason: `creation_failed: ${firstLine(created.error)}` };
  const pipelineId = created.value;
  ctx.open.push(pipelineId);
  ctx.announcements.push(createdAnnouncement(schedule, pipelineId, planned.pipeline.traceId, now));
  return { ok: true, pipelineId };
}

export type TickOutcome = 'created' | 'failed' | 'skipped' | 'queued' | 'already_fired';

/**
 * Fires one planned tick in guarded mode (addendum §14.5): the run claims the tick first (a tick
 * that already has a run is not fired again), then the overlap decides. The schedule overlaps while
 * any pipeline of an earlier run, whatever its trigger, is not terminal: Skip records a Skipped
 * run, Queue a Queued one (up to catchupMax, then Skipped queue_full), Replace cancels every
 * unfinished pipeline as POST cancel does and then creates, Allow creates.
 */
export async function fireTick(ctx: FireContext, tick: Date, trigger: 'Scheduled' | 'Catchup'): Promise<TickOutcome> {
  const { tx, schedule, now } = ctx;
  const base = { scheduleId: schedule.id, applicationId: schedule.applicationId, trigger, scheduledFor: tick, tick, createdAt: now };
  const claimed = await insertRun(tx, { ...base, status: 'Created', pipelineId: null, reason: null }, { skipIfFired: true });
  if (claimed === null) return 'already_fired';
  const record = (status: ScheduleRunStatus, pipelineId: number | null, reason: string | null) => settleRun(tx, claimed, { status, pipelineId, reason });
  const createAndRecord = async (reason: string | null): Promise<TickOutcome> => {
    const creation = await createPipeline(ctx);
    await (creation.ok ? record('Created', creation.pipelineId, reason) : record('Failed', null, creation.reason));
    return creation.ok ? 'created' : 'failed';
  };

  const decision = decideOverlap(schedule.overlapPolicy as OverlapPolicy, ctx.open.length > 0, ctx.queued, schedule.catchupMax);
  switch (decision.action) {
    case 'skip':
      await record('Skipped', null, decision.reason);
      return 'skipped';
    case 'queue':
      ctx.queued += 1;
      await record('Queued', null, decision.reason);
      return 'queued';
    case 'create':
      return createAndRecord(null);
    case 'replace': {
      let newest: number | null = null;
      for (const pipelineId of ctx.open.splice(0)) {
        if (!(await cancelPipelineInTransaction(tx, pipelineId, now))) continue;
        newest = pipelineId;
        ctx.announcements.push({ type: 'pipeline.cancelled', applicationId: schedule.applicationId, pipelineId });
      }
      return createAndRecord(newest === null ? null : `replaced:${newest}`);
    }
  }
}

/**
 * Queue (addendum §14.5): once no pipeline of the schedule is unfinished, the oldest Queued run
 * gets its pipeline and becomes Created. One at a time: its pipeline is the new overlap.
 */
export async function promoteQueuedRun(ctx: FireContext): Promise<boolean> {
  if (ctx.open.length > 0) return false;
  const runId = await oldestQueuedRun(ctx.tx, ctx.schedule.id);
  if (runId === null) return false;
  const creation = await createPipeline(ctx);
  await settleRun(
    ctx.tx,
    runId,
    creation.ok ? { status: 'Created', pipelineId: creation.pipelineId, reason: null } : { status: 'Failed', pipelineId: null, reason: creation.reason },
  );
  return true;
}
