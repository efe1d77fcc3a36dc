import { sqlOf, type Queryable, type SchedulePlanRecord } from '@po/db';
import { fireScheduleTicks, lockDueScheduleBatch, overlapStates, prepareFireStatements, scheduleDefinitionText, type DueScheduleRow, type FireOutcome, type OverlapState, type ScheduleFire } from '@po/engine';
import type { OverlapPolicy } from '@po/domain';
import { announceAll, type PendingAnnouncements, type SchedulerDeps } from './deps.js';
import { dueTicks, replanFrom } from './due-ticks.js';
import { enqueueMissedRunEvents, FireFailed, firedAnnouncements, recordCommitted, resultsOf, type FireResult } from './fire.js';
import { planCacheOf, planDefinition, planKey, type PlanCache, type PlannedDefinition } from './plan-cache.js';

/** Definitions up to this length come with the lock: a batch holds at most limit × this of them. */
export const INLINE_DEFINITION_BYTES = 16 * 1024;

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
 * Fires a batch of due schedules set-based, in one plain-pg transaction (decision 0086): lock up to
 * `limit` due schedules with SKIP LOCKED (small definitions come along), read their overlap state
 * in one statement, fire every tick through fireScheduleTicks (decided in memory, planned
 * definitions from the plan cache): pipelines, stages, context items, keywords, runs and plans in
 * one statement; commit; then one addBulk for the events, and the metrics. The unique
 * (schedule_id, tick) of runs still guards a tick against firing twice: a conflict fails the
 * statement and the batch rolls back, and so does any other failure (FireFailed names the locked
 * schedules; the pass retries them one by one in guarded mode). Null when nothing is due. With `ahead`, the batch takes the schedules due at a
 * coming fire instant exactly, decides as of it, leaves what aheadSafe refuses (returned in
 * `left`), and commits at that instant.
 */
export async function fireDueBatch(deps: SchedulerDeps, options: BatchOptions): Promise<BatchOutcome | null> {
  const ahead = options.ahead;
  const now = ahead?.at ?? deps.clock();
  const cache = deps.plans ?? planCacheOf(deps.db);
  const locked: number[] = [];
  let outcome: (BatchOutcome & { fired: FireOutcome['fired'] }) | null;
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
        const sameText = new Map<string, PlannedDefinition>();
        const fires: ScheduleFire[] = [];
        const missed = new Map<number, number>();
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
          const ticks = due
            ? [...due.catchup.map((tick) => ({ tick, trigger: 'Catchup' as const })), ...due.scheduled.map((tick) => ({ tick, trigger: 'Scheduled' as const }))]
            : [];
          if (schedule.overlapPolicy === 'Queue' && state.queued > 0 && state.open === 0 && ticks.length > 0) {
            deferred.push(schedule.id);
            continue;
          }
          missed.set(schedule.id, due?.missed ?? 0);
          fires.push({
            schedule,
            rules: { policy: schedule.overlapPolicy as OverlapPolicy, catchupMax: schedule.catchupMax },
            open: state.open,
            queued: state.queued,
            ticks,
            definition: () => plannedFor(tx, row, cache, sameText),
            // Due without a next tick (a stale plan): nothing to fire, plan again from now.
            plan: due ? { planAnchor: due.anchor, nextTickAt: due.nextTickAt, nextRunAt: due.nextRunAt, handledThrough: due.handledThrough } : replanFrom(schedule, now),
          });
        }
        // Stamped with the instant, or with now when the write comes after it (a burst larger than the lead time allowed).
        const clock = ahead ? () => new Date(Math.max(ahead.at.getTime(), deps.clock().getTime())) : deps.clock;
        // No cancel: Replace with something to cancel is deferred to the guarded path.
        const fired = await fireScheduleTicks(tx, fires, { now, clock });
        deferred.push(...fired.deferred.map((f) => f.schedule.id));
        const results = resultsOf(fired.fired, missed);
        await enqueueMissedRunEvents(tx, fired.fired, missed);
        if (ahead && results.length > 0) {
          // Written; the commit, and with it every pipeline of the batch, becomes visible at the instant.
          ahead.written({ left, deferred });
          await untilInstant(deps.clock, ahead.at);
        }
        return { results, deferred, left, fired: fired.fired };
      },
      { keyLookups: true },
    );
  } catch (err) {
    throw new FireFailed(locked, err);
  }
  if (outcome === null) return null;
  const committedAt = deps.clock().getTime();
  const announcements = firedAnnouncements(outcome.fired);
  if (options.announcements) options.announcements.add(announcements);
  else await announceAll(deps, announcements);
  recordCommitted(
    deps,
    outcome.results,
    outcome.fired.flatMap((f) => f.ticks.filter((t) => t.trigger === 'Scheduled').map((t) => committedAt - t.tick.getTime())),
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

/**
 * Prepares the fire statements on a new connection before the pool hands it out (createDb's
 * `onConnect`, which the pool waits for): a burst then finds them planned and the tables' catalog
 * entries loaded, instead of paying that on each cold connection at the fire time. A failure only
 * loses the warm-up; the statements are then prepared on first use.
 */
export async function warmFireConnection(connection: Queryable): Promise<void> {
  await prepareFireStatements(connection).catch(() => undefined);
}
