import {
  lockDueScheduleBatch,
  overlapStates,
  prepareFireStatements,
  scheduleDefinitionText,
  sqlOf,
  writeFiredBatch,
  type DueScheduleRow,
  type FiredRun,
  type OverlapState,
  type Queryable,
  type ScheduledPipeline,
  type SchedulePlanRecord,
  type SchedulePlanWrite,
  type ScheduleRunStatus,
} from '@po/db';
import { decideOverlap, newSpanId, newTraceId, type OverlapPolicy } from '@po/domain';
import { createdAnnouncement, type TickOutcome } from './create-run.js';
import { announceAll, type Announcement, type PendingAnnouncements, type SchedulerDeps } from './deps.js';
import { dueTicks, replanFrom } from './due-ticks.js';
import { FireFailed, recordCommitted, type FireResult } from './fire.js';
import { planCacheOf, planDefinition, planKey, type PlanCache, type PlannedDefinition } from './plan-cache.js';

/** Definitions up to this length come with the lock: a batch holds at most limit × this of them. */
export const INLINE_DEFINITION_BYTES = 16 * 1024;
/** Template text one write statement carries at most; a larger template is written alone. */
export const WRITE_BUDGET_BYTES = 8 * 1024 * 1024;

export interface BatchOptions {
  /** Schedules per transaction (SCHEDULER_BATCH_SIZE). */
  limit: number;
  /** Schedules not to take (this pass gave up on them, or handles them in guarded mode). */
  exclude: ReadonlySet<number>;
  /** Where the committed batch's events go (the pass publishes them); without it they are published at once. */
  announcements?: PendingAnnouncements;
  /**
   * Prepare ahead (decision 0097): fire as of `at`, a fire instant still to come, and hold the
   * commit until the clock reaches it. `written` is called once the batch's rows are written and the
   * transaction only waits for `at`, so the caller can prepare the next batch meanwhile; it names
   * the schedules the batch holds locked without firing them (BatchOutcome's `left` and `deferred`).
   */
  ahead?: { at: Date; written: (held: { left: readonly number[]; deferred: readonly number[] }) => void };
}

export interface BatchOutcome {
  results: FireResult[];
  /**
   * Locked but left untouched for the guarded path: Replace schedules that must cancel (their
   * pipelines, or one this batch would create for an earlier tick), and Queue schedules whose
   * Queued runs are due for promotion first (the oldest run goes first).
   */
  deferred: number[];
  /**
   * Ahead mode only: locked but left untouched, for the pass at the fire instant — schedules whose
   * outcome could still change before it (see aheadSafe), stale plans, and what the guarded path
   * would take. Not deferred: nothing was decided for them.
   */
  left: number[];
}

interface TickDecision {
  tick: Date;
  trigger: 'Scheduled' | 'Catchup';
  status: ScheduleRunStatus;
  reason: string | null;
  create: boolean;
}

interface Created {
  schedule: Pick<SchedulePlanRecord, 'applicationId' | 'name'>;
  traceId: string;
  position: number;
}

/**
 * Collects a batch's pipelines, runs and plans and writes them with writeFiredBatch: normally all
 * in one statement; when the templates held exceed WRITE_BUDGET_BYTES, in several, so a batch of
 * huge definitions never holds more than the budget plus one definition.
 */
class BatchWriter {
  private templates: string[] = [];
  /** Index in `templates` of each planned definition of this write: schedules with the same definition share one. */
  private templateOf = new Map<PlannedDefinition, number>();
  private bytes = 0;
  private pipelines: ScheduledPipeline[] = [];
  private runs: FiredRun[] = [];
  private plans: ({ scheduleId: number } & SchedulePlanWrite)[] = [];
  private pending: Created[] = [];
  /** Created pipelines: id, trace id and creation time, in creation order. */
  readonly created: { schedule: Created['schedule']; pipelineId: number; traceId: string; at: Date }[] = [];

  constructor(
    private readonly tx: Queryable,
    /** The creation time of what flush writes: now, or the fire instant of a batch prepared ahead. */
    private readonly clock: () => Date,
  ) {}

  async add(schedule: SchedulePlanRecord, planned: PlannedDefinition | undefined, decisions: readonly TickDecision[], runAt: Date, plan: SchedulePlanWrite): Promise<void> {
    let template = -1;
    if (planned?.ok && decisions.some((d) => d.create)) {
      let index = this.templateOf.get(planned);
      if (index === undefined) {
        if (this.bytes > 0 && this.bytes + planned.template.length > WRITE_BUDGET_BYTES) await this.flush();
        index = this.templates.push(planned.template) - 1;
        this.templateOf.set(planned, index);
        this.bytes += planned.template.length;
      }
      template = index;
    }
    for (const d of decisions) {
      let pipeline: number | null = null;
      if (d.create && planned?.ok) {
        const traceId = planned.traceId ?? newTraceId();
        const spanIds = Array.from({ length: planned.stageCount }, newSpanId).join('');
        pipeline = this.pipelines.push({ applicationId: schedule.applicationId, scheduleId: schedule.id, traceId, template, spanIds }) - 1;
        this.pending.push({ schedule, traceId, position: pipeline });
      }
      this.runs.push({
        scheduleId: schedule.id,
        applicationId: schedule.applicationId,
        trigger: d.trigger,
        status: d.status,
        scheduledFor: d.tick,
        tick: d.tick,
        pipeline,
        reason: d.reason,
        createdAt: runAt,
      });
    }
    this.plans.push({ scheduleId: schedule.id, ...plan });
  }

  async flush(): Promise<void> {
    if (this.runs.length === 0 && this.plans.length === 0) return;
    const now = this.clock();
    const ids = await writeFiredBatch(this.tx, { now, templates: this.templates, pipelines: this.pipelines, runs: this.runs, plans: this.plans });
    for (const c of this.pending) this.created.push({ schedule: c.schedule, pipelineId: ids[c.position]!, traceId: c.traceId, at: now });
    this.templates = [];
    this.templateOf.clear();
    this.bytes = 0;
    this.pipelines = [];
    this.runs = [];
    this.plans = [];
    this.pending = [];
  }
}

/**
 * The planned definition of a locked schedule: from the plan cache, else planned from its
 * definition (inline, or read now). `sameText` holds this batch's plans of inline definitions by
 * their text: schedules with one definition (a common pattern) are parsed and planned once and
 * share one template in the write.
 */
async function plannedFor(tx: Queryable, row: DueScheduleRow, cache: PlanCache, sameText: Map<string, PlannedDefinition>): Promise<PlannedDefinition> {
  const { schedule } = row;
  const key = planKey(schedule, row.definitionStoredBytes);
  const cached = cache.get(schedule.id, key);
  if (cached) return cached;
  let planned = row.definitionText === null ? undefined : sameText.get(row.definitionText);
  if (planned === undefined) {
    const text = row.definitionText ?? (await scheduleDefinitionText(tx, schedule.id));
    planned = planDefinition(schedule, text === null ? null : JSON.parse(text));
    if (row.definitionText !== null) sameText.set(row.definitionText, planned);
  }
  cache.set(schedule.id, key, planned);
  return planned;
}

/**
 * The overlap decisions of one schedule's due ticks (addendum §14.5), in order, each tick seeing
 * the pipelines the earlier ones create. `failure` is the reason creation fails (its definition
 * breaks the creation rules), or null when it succeeds. Null when the schedule must go the guarded
 * way: Replace with something to cancel.
 */
function decide(schedule: SchedulePlanRecord, ticks: readonly { tick: Date; trigger: TickDecision['trigger'] }[], state: OverlapState, failure: string | null): TickDecision[] | null {
  let open = state.open;
  let queued = state.queued;
  const decisions: TickDecision[] = [];
  for (const { tick, trigger } of ticks) {
    const decision = decideOverlap(schedule.overlapPolicy as OverlapPolicy, open > 0, queued, schedule.catchupMax);
    switch (decision.action) {
      case 'replace':
        return null;
      case 'skip':
        decisions.push({ tick, trigger, status: 'Skipped', reason: decision.reason, create: false });
        break;
      case 'queue':
        queued += 1;
        decisions.push({ tick, trigger, status: 'Queued', reason: decision.reason, create: false });
        break;
      case 'create':
        if (failure === null) open += 1;
        decisions.push(failure === null ? { tick, trigger, status: 'Created', reason: null, create: true } : { tick, trigger, status: 'Failed', reason: failure, create: false });
        break;
    }
  }
  return decisions;
}

/**
 * Fires a batch of due schedules set-based, in one plain-pg transaction (decision 0086): lock up to
 * `limit` due schedules with SKIP LOCKED (small definitions come along), read their overlap state
 * in one statement, decide every tick in memory (planned definitions from the plan cache), write
 * pipelines, stages, context items, keywords, runs and plans in one statement, commit; then one
 * addBulk for the events, and the metrics. The unique (schedule_id, tick) of runs still guards a
 * tick against firing twice: a conflict fails the statement and the batch rolls back, and so does
 * any other failure (FireFailed names the locked schedules; the pass retries them one by one in
 * guarded mode). Null when nothing is due. With `ahead`, the batch takes the schedules due at a
 * coming fire instant exactly, decides as of it, leaves what aheadSafe refuses (returned in
 * `left`), and commits at that instant.
 */
export async function fireDueBatch(deps: SchedulerDeps, options: BatchOptions): Promise<BatchOutcome | null> {
  const ahead = options.ahead;
  const now = ahead?.at ?? deps.clock();
  const cache = deps.plans ?? planCacheOf(deps.db);
  const locked: number[] = [];
  const scheduledTicks: Date[] = [];
  let outcome: (BatchOutcome & { created: BatchWriter['created'] }) | null;
  try {
    outcome = await sqlOf(deps.db).transaction(
      async (tx) => {
        const rows = await lockDueScheduleBatch(tx, now, {
          limit: options.limit,
          exclude: [...options.exclude],
          inlineDefinitionBytes: INLINE_DEFINITION_BYTES,
          exactlyAt: ahead !== undefined,
        });
        if (rows.length === 0) return null;
        locked.push(...rows.map((r) => r.schedule.id));
        const overlapping = rows.filter((r) => r.schedule.overlapPolicy !== 'Allow').map((r) => r.schedule);
        const states = overlapping.length > 0 ? await overlapStates(tx, overlapping) : new Map<number, OverlapState>();
        // Stamped with the instant, or with now when the write comes after it (a burst larger than the lead time allowed).
        const writer = new BatchWriter(tx, ahead ? () => new Date(Math.max(ahead.at.getTime(), deps.clock().getTime())) : deps.clock);
        const sameText = new Map<string, PlannedDefinition>();
        const results: FireResult[] = [];
        const deferred: number[] = [];
        const left: number[] = [];
        for (const row of rows) {
          const { schedule } = row;
          const due = dueTicks(schedule, now, deps.misfireGraceSeconds);
          const state = states.get(schedule.id) ?? { open: 0, queued: 0 };
          if (ahead && (due === null || !aheadSafe(schedule, state))) {
            left.push(schedule.id);
            continue;
          }
          if (due === null) {
            // Due without a next tick (a stale plan): nothing to fire, plan again from now.
            await writer.add(schedule, undefined, [], now, replanFrom(schedule, now));
            results.push({ scheduleId: schedule.id, outcomes: [], missed: 0 });
            continue;
          }
          const ticks = [...due.catchup.map((tick) => ({ tick, trigger: 'Catchup' as const })), ...due.scheduled.map((tick) => ({ tick, trigger: 'Scheduled' as const }))];
          if (schedule.overlapPolicy === 'Queue' && state.queued > 0 && state.open === 0 && ticks.length > 0) {
            deferred.push(schedule.id);
            continue;
          }
          let decisions = decide(schedule, ticks, state, null);
          if (decisions === null) {
            deferred.push(schedule.id);
            continue;
          }
          // Planned only when a tick creates: a schedule whose ticks all skip or queue reads no definition.
          const planned = decisions.some((d) => d.create) ? await plannedFor(tx, row, cache, sameText) : undefined;
          // No pipeline, no overlap: the later ticks then decide (and fail) alike.
          if (planned && !planned.ok) decisions = decide(schedule, ticks, state, planned.reason)!;
          await writer.add(schedule, planned, decisions, now, { planAnchor: due.anchor, nextTickAt: due.nextTickAt, nextRunAt: due.nextRunAt, handledThrough: due.handledThrough });
          scheduledTicks.push(...due.scheduled);
          results.push({ scheduleId: schedule.id, outcomes: decisions.map(outcomeOf), missed: due.missed });
        }
        await writer.flush();
        if (ahead && results.length > 0) {
          // Written; the commit, and with it every pipeline of the batch, becomes visible at the instant.
          ahead.written({ left, deferred });
          await untilInstant(deps.clock, ahead.at);
        }
        return { results, deferred, left, created: writer.created };
      },
      { keyLookups: true },
    );
  } catch (err) {
    throw new FireFailed(locked, err);
  }
  if (outcome === null) return null;
  const committedAt = deps.clock().getTime();
  const announcements: Announcement[] = outcome.created.map((c) => createdAnnouncement(c.schedule, c.pipelineId, c.traceId, c.at));
  if (options.announcements) options.announcements.add(announcements);
  else await announceAll(deps, announcements);
  recordCommitted(
    deps,
    outcome.results,
    scheduledTicks.map((tick) => committedAt - tick.getTime()),
  );
  return { results: outcome.results, deferred: outcome.deferred, left: outcome.left };
}

/**
 * Whether a batch prepared ahead may decide a schedule's ticks before their fire instant: only
 * when nothing that happens until then can change the decision. Allow never looks at other
 * pipelines; under the other policies a schedule with no open pipeline and no Queued run can only
 * gain one through a change that takes the schedule's row lock (a fire, POST trigger), which waits
 * for this batch's commit. An open pipeline, though, may end before the instant: that one is left
 * for the pass at the fire instant.
 */
export function aheadSafe(schedule: Pick<SchedulePlanRecord, 'overlapPolicy'>, state: OverlapState): boolean {
  return schedule.overlapPolicy === 'Allow' || (state.open === 0 && state.queued === 0);
}

/** Resolves when `clock()` has reached `at` (a Node timer may wake a millisecond early). */
export async function untilInstant(clock: () => Date, at: Date): Promise<void> {
  for (let left = at.getTime() - clock().getTime(); left > 0; left = at.getTime() - clock().getTime()) {
    await new Promise((resolve) => setTimeout(resolve, left));
  }
}

const outcomeOf = (d: TickDecision): TickOutcome => ({ Created: 'created', Failed: 'failed', Skipped: 'skipped', Queued: 'queued' })[d.status] as TickOutcome;

/**
 * Prepares the fire statements on a new connection before the pool hands it out (createDb's
 * `onConnect`, which the pool waits for): a burst then finds them planned and the tables' catalog
 * entries loaded, instead of paying that on each cold connection at the fire time. A failure only
 * loses the warm-up; the statements are then prepared on first use.
 */
export async function warmFireConnection(connection: Queryable): Promise<void> {
  await prepareFireStatements(connection).catch(() => undefined);
}
