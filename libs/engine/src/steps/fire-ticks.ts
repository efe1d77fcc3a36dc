import {
  newSpanId,
  newTraceId,
  planPipeline,
  planTicks,
  type FireRules,
  type FireTick,
  type FiredStatus,
  type PipelineDefinitionInput,
  type TickPlan,
} from '@po/domain';
import { statement, type Queryable } from '@po/db';
import { pipelineTemplate, writeFired, type FiredRun, type ScheduledPipeline } from './fire.js';
import type { SchedulePlanRecord, SchedulePlanWrite } from '@po/db';

/**
 * Firing a schedule's ticks (addendum §14.5–§14.7): the one operation behind the scheduler's
 * set-based batches and its guarded path, Queue promotion, POST …/trigger and POST …/backfill.
 * What each tick does is @po/domain's planTicks; this carries it out — pipelines, their stages,
 * context and keywords, runs and advanced plans in one statement per batch (writeFired, decision
 * 0086), Replace cancellations through the caller's `cancel`.
 */

/** Template text one write statement carries at most; a larger template is written alone. */
export const WRITE_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * A schedule's definition, planned once as pipeline creation plans it (planPipeline: validation and
 * normalisation) and kept as the template the fire statement reads. Every pipeline created from it
 * still gets its own trace id (unless the definition fixes one) and its own stage span ids.
 */
export type PlannedDefinition =
  | { ok: true; template: string; stageCount: number; traceId: string | null }
  | { ok: false; reason: string };

/** Plans a definition as pipeline creation does; a definition that breaks the creation rules gives its reason. */
export function planDefinition(schedule: Pick<SchedulePlanRecord, 'id' | 'applicationId'>, definition: unknown): PlannedDefinition {
  const input = definition as PipelineDefinitionInput;
  const planned = planPipeline(input, { applicationId: schedule.applicationId, scheduleId: schedule.id });
  if (!planned.ok) return { ok: false, reason: `creation_failed: ${planned.errors.map((e) => `${e.field} ${e.message}`).join('; ')}` };
  return { ok: true, template: pipelineTemplate(planned.pipeline), stageCount: planned.pipeline.stages.length, traceId: input.traceId ?? null };
}

export interface TickToFire extends FireTick {
  /** A Queued run this tick promotes (§14.5): the run gets the pipeline, no new run is recorded. */
  run?: number;
}

export interface ScheduleFire {
  schedule: Pick<SchedulePlanRecord, 'id' | 'applicationId' | 'name'>;
  rules: FireRules;
  /** Its unfinished pipelines: their ids, oldest first, where Replace may cancel them; else how many. */
  open: readonly number[] | number;
  /** Its Queued runs (what Queue counts against catchupMax). */
  queued: number;
  /** In order: catch-up ticks before scheduled ones, a backfill's oldest first. */
  ticks: readonly TickToFire[];
  /** Its definition, planned; asked for only when a tick creates a pipeline. */
  definition: () => PlannedDefinition | Promise<PlannedDefinition>;
  /** The advanced plan, written with the runs; absent: the plan is untouched (trigger, backfill). */
  plan?: SchedulePlanWrite;
}

export type TickOutcome = 'created' | 'failed' | 'skipped' | 'queued' | 'already_fired';

export interface FiredTick extends TickToFire {
  outcome: TickOutcome;
  /** Null: the tick already had a run, nothing was written for it. */
  status: FiredStatus | null;
  reason: string | null;
  /** The run recorded, or promoted. */
  runId: number | null;
  pipeline: { id: number; traceId: string; createdAt: Date } | null;
  /** What this tick cancelled first (Replace), oldest first. */
  cancelled: number[];
}

export interface FireOptions {
  /** When the ticks are handled: createdAt of the runs. */
  now: Date;
  /** Read when pipelines are written: their createdAt (the fire instant of a batch prepared ahead). */
  clock: () => Date;
  /**
   * Cancels one pipeline as POST cancel does, in the caller's transaction; false when it was
   * terminal already. Without it, a schedule whose ticks would cancel is not fired (`deferred`).
   */
  cancel?: (pipelineId: number) => Promise<boolean>;
  /**
   * Each schedule written in a statement of its own under a savepoint: a pipeline the database
   * refuses makes that schedule's creating ticks Failed (`creation_failed: …`) instead of failing
   * the transaction. Without it a batch is one statement, and any failure is the caller's.
   */
  isolate?: boolean;
  /**
   * A tick that already has a run (a Backfill run for a Backfill tick, else a run claiming the
   * tick) is left alone (`already_fired`). The callers hold the schedule's row lock, which every
   * writer of its runs takes first. Without it such a tick fails the statement (unique index).
   */
  skipFired?: boolean;
}

export interface FireOutcome {
  fired: { fire: ScheduleFire; ticks: FiredTick[] }[];
  /** Not fired, nothing written: their ticks would cancel and no `cancel` was given. */
  deferred: ScheduleFire[];
}

/**
 * Fires each schedule's ticks as planTicks decides them, in the caller's transaction, and returns
 * what each tick did. The pipelines of a schedule that were unfinished before its first tick are
 * cancelled before anything is written; pipelines an earlier tick of the same call created, after
 * (they exist only then).
 */
export async function fireScheduleTicks(tx: Queryable, fires: readonly ScheduleFire[], options: FireOptions): Promise<FireOutcome> {
  const fired = options.skipFired ? await firedTicks(tx, fires) : new Set<string>();
  const writer = new BatchWriter(tx, options);
  const outcome: FireOutcome = { fired: [], deferred: [] };
  const replacedLater: { tick: FiredTick; of: FiredTick[] }[] = [];
  for (const fire of fires) {
    const ticks: FiredTick[] = fire.ticks.map((t) => ({ ...t, outcome: 'already_fired', status: null, reason: null, runId: null, pipeline: null, cancelled: [] }));
    const fresh = ticks.filter((t) => !fired.has(firedKey(fire.schedule.id, t)));
    const state = { open: typeof fire.open === 'number' ? fire.open : fire.open.length, queued: fire.queued };
    let plans = planTicks(fire.rules, state, fresh, null);
    if (plans.some((p) => p.replace)) {
      if (!options.cancel) {
        outcome.deferred.push(fire);
        continue;
      }
      if (typeof fire.open === 'number' && fire.open > 0) throw new Error(`schedule ${fire.schedule.id}: Replace needs the ids of its unfinished pipelines`);
    }
    // Planned only when a tick creates: a schedule whose ticks all skip or queue reads no definition.
    const planned = plans.some((p) => p.create) ? await fire.definition() : undefined;
    if (planned && !planned.ok) plans = planTicks(fire.rules, state, fresh, planned.reason);
    // Only the first tick can find pipelines from before (Replace leaves none open after it). They
    // are cancelled first, and stay cancelled when the creation then fails, as in POST cancel.
    const before = typeof fire.open === 'number' ? [] : fire.open;
    const newestBefore = plans[0]?.replace && before.length > 0 ? await cancelAll(options.cancel!, before, fresh[0]!) : null;
    if (options.isolate) {
      const failure = await isolated(tx, async () => {
        await writer.add(fire, planned, fresh, plans, newestBefore);
        await writer.flush();
      });
      if (failure !== null) {
        writer.discard();
        plans = planTicks(fire.rules, state, fresh, `creation_failed: ${failure}`);
        await writer.add(fire, undefined, fresh, plans, newestBefore);
        await writer.flush();
      }
    } else {
      await writer.add(fire, planned, fresh, plans, newestBefore);
    }
    for (const [i, of] of replacedByTick(plans).entries()) if (of.length > 0) replacedLater.push({ tick: fresh[i]!, of: of.map((j) => fresh[j]!) });
    outcome.fired.push({ fire, ticks });
  }
  await writer.flush();
  // Pipelines an earlier tick of the same schedule created exist only now; they were NotStarted and
  // unseen, so each cancel succeeds.
  for (const { tick, of } of replacedLater) {
    for (const { pipeline } of of) if (pipeline && (await options.cancel!(pipeline.id))) tick.cancelled.push(pipeline.id);
  }
  return outcome;
}

/** Per tick, the earlier ticks of the same firing whose pipelines it replaces (Replace leaves one open at a time). */
function replacedByTick(plans: readonly TickPlan[]): number[][] {
  let open: number[] = [];
  return plans.map((p, i) => {
    const replaces = p.replace ? open : [];
    if (p.replace) open = [];
    if (p.create) open.push(i);
    return replaces;
  });
}

/** What the database said: a pg error's message, or the one Prisma's driver adapter wraps (its own message starts with a blank line). */
function refusal(err: unknown): string {
  const cause = (err as { meta?: { driverAdapterError?: { cause?: { originalMessage?: unknown } } } } | null)?.meta?.driverAdapterError?.cause;
  if (typeof cause?.originalMessage === 'string') return cause.originalMessage;
  return err instanceof Error ? (err.message.split('\n').find((line) => line.trim() !== '') ?? 'error') : 'unknown error';
}

const SAVEPOINT = statement('schedule_fire_savepoint', 'SAVEPOINT po_fire');
const RELEASE = statement('schedule_fire_release', 'RELEASE SAVEPOINT po_fire');
const ROLLBACK = statement('schedule_fire_rollback', 'ROLLBACK TO SAVEPOINT po_fire');

/** Runs `fn` under a savepoint; on failure only its writes are undone, and what the database said is returned. */
async function isolated(tx: Queryable, fn: () => Promise<void>): Promise<string | null> {
  await tx.query(SAVEPOINT);
  try {
    await fn();
    await tx.query(RELEASE);
    return null;
  } catch (err) {
    await tx.query(ROLLBACK);
    return refusal(err);
  }
}

/** Cancels `ids` (oldest first) for `tick`; the newest actually cancelled, which the run's reason names. */
async function cancelAll(cancel: (pipelineId: number) => Promise<boolean>, ids: readonly number[], tick: FiredTick): Promise<number | null> {
  let newest: number | null = null;
  for (const id of ids) {
    if (!(await cancel(id))) continue;
    tick.cancelled.push(id);
    newest = id;
  }
  return newest;
}

const firedKey = (scheduleId: number, t: TickToFire) => `${scheduleId}:${t.trigger === 'Backfill' ? 'b' : 't'}:${t.tick.getTime()}`;

/** The instants of the fire statement (epoch ms through to_timestamp), so equal ticks compare equal. */
const FIRED = statement(
  'schedule_fire_fired',
  `SELECT (x.ord - 1)::int AS idx
   FROM unnest($1::bigint[], $2::float8[], $3::boolean[]) WITH ORDINALITY AS x(schedule_id, at, backfill, ord)
   WHERE CASE WHEN x.backfill
     THEN EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = x.schedule_id AND r.backfill_tick = to_timestamp(x.at / 1000))
     ELSE EXISTS (SELECT 1 FROM schedule_runs r WHERE r.schedule_id = x.schedule_id AND r.tick = to_timestamp(x.at / 1000)) END`,
);

/** The ticks of `fires` that already have their run, as firedKey: Manual and promoted ones never do. */
async function firedTicks(tx: Queryable, fires: readonly ScheduleFire[]): Promise<Set<string>> {
  const asked = fires.flatMap((f) => f.ticks.filter((t) => t.trigger !== 'Manual' && t.run === undefined).map((t) => ({ scheduleId: f.schedule.id, t })));
  if (asked.length === 0) return new Set();
  const rows = await tx.query<{ idx: number }>(FIRED, [asked.map((a) => a.scheduleId), asked.map((a) => a.t.tick.getTime()), asked.map((a) => a.t.trigger === 'Backfill')]);
  return new Set(rows.map((r) => firedKey(asked[r.idx]!.scheduleId, asked[r.idx]!.t)));
}

const SETTLE = statement(
  'schedule_fire_settle',
  `UPDATE schedule_runs AS r SET status = x.status, pipeline_id = x.pipeline_id, reason = x.reason
   FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[]) AS x(id, status, pipeline_id, reason)
   WHERE r.id = x.id`,
);

const OUTCOMES: Record<FiredStatus, TickOutcome> = { Created: 'created', Failed: 'failed', Skipped: 'skipped', Queued: 'queued' };

/**
 * Collects pipelines, runs and plans and writes them with writeFired: normally all in one
 * statement; when the templates held exceed WRITE_BUDGET_BYTES, in several, so a batch of huge
 * definitions never holds more than the budget plus one definition. A schedule's pipelines always
 * go into one statement.
 */
class BatchWriter {
  private templates: string[] = [];
  /** Index in `templates` of each planned definition of this write: schedules with the same definition share one. */
  private templateOf = new Map<PlannedDefinition, number>();
  private bytes = 0;
  private pipelines: ScheduledPipeline[] = [];
  private runs: FiredRun[] = [];
  private plans: ({ scheduleId: number } & SchedulePlanWrite)[] = [];
  /** What the write fills in: each tick's pipeline (by position) and run (by position, or a promoted one). */
  private pending: { tick: FiredTick; pipeline: number | null; traceId: string; run: number | null }[] = [];

  constructor(
    private readonly tx: Queryable,
    private readonly options: Pick<FireOptions, 'now' | 'clock'>,
  ) {}

  async add(fire: ScheduleFire, planned: PlannedDefinition | undefined, ticks: readonly FiredTick[], plans: readonly TickPlan[], newestBefore: number | null): Promise<void> {
    const { schedule } = fire;
    let template = -1;
    if (planned?.ok && plans.some((p) => p.create)) {
      let index = this.templateOf.get(planned);
      if (index === undefined) {
        if (this.bytes > 0 && this.bytes + planned.template.length > WRITE_BUDGET_BYTES) await this.flush();
        index = this.templates.push(planned.template) - 1;
        this.templateOf.set(planned, index);
        this.bytes += planned.template.length;
      }
      template = index;
    }
    const positions: (number | null)[] = [];
    for (const [i, replaces] of replacedByTick(plans).entries()) {
      const p = plans[i]!;
      const tick = ticks[i]!;
      let pipeline: number | null = null;
      let traceId = '';
      if (p.create && planned?.ok) {
        traceId = planned.traceId ?? newTraceId();
        const spanIds = Array.from({ length: planned.stageCount }, newSpanId).join('');
        pipeline = this.pipelines.push({ applicationId: schedule.applicationId, scheduleId: schedule.id, traceId, template, spanIds }) - 1;
      }
      positions.push(pipeline);
      // Replace names the newest pipeline it cancelled: one of this write (its id is drawn by the
      // statement), else the newest of those open before the first tick.
      const replaced = p.status === 'Created' && replaces.length > 0 ? positions[replaces.at(-1)!]! : null;
      const reason = p.status === 'Created' && p.replace && replaced === null && i === 0 && newestBefore !== null ? `replaced:${newestBefore}` : p.reason;
      Object.assign(tick, { status: p.status, outcome: OUTCOMES[p.status], reason, pipeline: null, runId: null });
      let run: number | null = null;
      if (tick.run === undefined) {
        const backfill = tick.trigger === 'Backfill';
        run =
          this.runs.push({
            scheduleId: schedule.id,
            applicationId: schedule.applicationId,
            trigger: tick.trigger,
            status: p.status,
            scheduledFor: tick.tick,
            tick: backfill || tick.trigger === 'Manual' ? null : tick.tick,
            backfillTick: backfill ? tick.tick : null,
            pipeline,
            reason,
            replaced,
            createdAt: this.options.now,
          }) - 1;
      }
      this.pending.push({ tick, pipeline, traceId, run });
    }
    if (fire.plan) this.plans.push({ scheduleId: schedule.id, ...fire.plan });
  }

  async flush(): Promise<void> {
    if (this.runs.length === 0 && this.plans.length === 0 && this.pending.length === 0) return;
    const now = this.options.clock();
    const ids = await writeFired(this.tx, { now, templates: this.templates, pipelines: this.pipelines, runs: this.runs, plans: this.plans });
    const settled: FiredTick[] = [];
    for (const { tick, pipeline, traceId, run } of this.pending) {
      if (pipeline !== null) tick.pipeline = { id: ids.pipelines[pipeline]!, traceId, createdAt: now };
      if (run !== null) tick.runId = ids.runs[run]!;
      else {
        tick.runId = tick.run!;
        settled.push(tick);
      }
    }
    if (settled.length > 0) {
      await this.tx.query(SETTLE, [settled.map((t) => t.runId), settled.map((t) => t.status), settled.map((t) => t.pipeline?.id ?? null), settled.map((t) => t.reason)]);
    }
    this.discard();
  }

  /** Drops what was added since the last flush (a write that failed under a savepoint). */
  discard(): void {
    this.templates = [];
    this.templateOf.clear();
    this.bytes = 0;
    this.pipelines = [];
    this.runs = [];
    this.plans = [];
    this.pending = [];
  }
}
