import {
  cancelPipelineInTransaction,
  inSavepoint,
  insertPipeline,
  insertRun,
  oldestQueuedRun,
  scheduleDefinition,
  settleRun,
  type DbOrTx,
  type NewRun,
  type SchedulePlanRecord,
  type ScheduleRunStatus,
} from '@po/db';
import { decideOverlap, planPipeline, type OverlapPolicy, type PipelineDefinitionInput } from '@po/domain';
import { ATTR_SCHEDULE_NAME, startPipelineSpan, traceparentOf, tracingEnabled } from '@po/telemetry';
import type { Announcement } from './deps.js';

/**
 * One schedule inside a fire transaction. `open` (its unfinished pipelines) and `queued` (its
 * Queued runs) are read once per transaction and kept current as ticks create, cancel and queue.
 */
export interface FireContext {
  tx: DbOrTx;
  schedule: SchedulePlanRecord;
  /**
   * The schedule's definition, read by the first tick that creates a pipeline and kept for its
   * other ticks. It lives as long as this context, one schedule of the batch, so a fire
   * transaction holds at most one definition at a time.
   */
  definition?: unknown;
  /** The instant the transaction handles ticks at (due, missed, run createdAt). */
  now: Date;
  /** Read when a pipeline is written: its createdAt is when it was created, not when the batch began. */
  clock: () => Date;
  /**
   * Guarded mode claims each tick before acting (a tick that already has a run is not fired
   * again) and creates pipelines under a savepoint, so a failed creation becomes a Failed run.
   * The fast mode collects the runs for one insert at the end; any failure rolls the batch back
   * and the pass retries its schedules one by one in guarded mode.
   */
  guarded: boolean;
  open: number[];
  queued: number;
  /** Runs to insert at the end of the transaction (fast mode). */
  runs: NewRun[];
  announcements: Announcement[];
}

type Creation = { ok: true; pipelineId: number } | { ok: false; reason: string };

const firstLine = (err: unknown): string => (err instanceof Error ? (err.message.split('\n')[0] ?? 'error') : 'unknown error');

/**
 * Creates the schedule's pipeline through the one creation path of the product (planPipeline +
 * insertPipeline, due for dispatch at once; pipeline.created is published after commit).
 */
async function createPipeline(ctx: FireContext): Promise<Creation> {
  const { schedule, tx } = ctx;
  ctx.definition ??= await scheduleDefinition(tx, schedule.id);
  const now = ctx.clock();
  const planned = planPipeline(ctx.definition as PipelineDefinitionInput, { applicationId: schedule.applicationId, scheduleId: schedule.id });
  if (!planned.ok) return { ok: false, reason: `creation_failed: ${planned.errors.map((e) => `${e.field} ${e.message}`).join('; ')}` };
  let pipelineId: number;
  if (ctx.guarded) {
    const created = await inSavepoint(tx, () => insertPipeline(tx, planned.pipeline, now));
    if (!created.ok) return { ok: false, reason: `creation_failed: ${firstLine(created.error)}` };
    pipelineId = created.value;
  } else {
    pipelineId = await insertPipeline(tx, planned.pipeline, now);
  }
  ctx.open.push(pipelineId);
  // Tracing on only: the scheduled pipeline's trace opens with this span (its stages' spans are its children).
  const span = tracingEnabled()
    ? startPipelineSpan('schedule.fire', { traceId: planned.pipeline.traceId, applicationId: schedule.applicationId, id: pipelineId }, now.getTime(), {
        [ATTR_SCHEDULE_NAME]: schedule.name,
      })
    : undefined;
  span?.end();
  ctx.announcements.push({ type: 'pipeline.created', applicationId: schedule.applicationId, pipelineId, traceparent: span && traceparentOf(span) });
  return { ok: true, pipelineId };
}

export type TickOutcome = 'created' | 'failed' | 'skipped' | 'queued' | 'already_fired';

/**
 * Fires one planned tick (addendum §14.5). The schedule overlaps while any pipeline of an earlier
 * run, whatever its trigger, is not terminal: Skip records a Skipped run, Queue a Queued one (up
 * to catchupMax, then Skipped queue_full), Replace cancels every unfinished pipeline as POST
 * cancel does and then creates, Allow creates.
 */
export async function fireTick(ctx: FireContext, tick: Date, trigger: 'Scheduled' | 'Catchup'): Promise<TickOutcome> {
  const { tx, schedule, now } = ctx;
  const base = { scheduleId: schedule.id, applicationId: schedule.applicationId, trigger, scheduledFor: tick, tick, createdAt: now };
  let claimed: number | null = null;
  if (ctx.guarded) {
    claimed = await insertRun(tx, { ...base, status: 'Created', pipelineId: null, reason: null }, { skipIfFired: true });
    if (claimed === null) return 'already_fired';
  }
  const record = async (status: ScheduleRunStatus, pipelineId: number | null, reason: string | null) => {
    if (claimed !== null) await settleRun(tx, claimed, { status, pipelineId, reason });
    else ctx.runs.push({ ...base, status, pipelineId, reason });
  };
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
