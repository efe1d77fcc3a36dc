import { randomUUID } from 'node:crypto';
import {
  allocateSlots,
  applyFailure,
  checkAddedStages,
  expiryLogMessage,
  expiryOf,
  fenceResult,
  mergeContext,
  newSpanId,
  nextRetryAtOf,
  passOutcome,
  planDispatch,
  redactSecrets,
  resultTransition,
  stageFromInfo,
  type FailureOutcome,
  type StageNode,
  type StageStatus,
} from '@po/domain';
import type { ContextEntryRow, LockedPipeline, NewStageRow, PassStage, PassWrite, StageWrite } from '@po/db';
import type { StageResultMessage } from '@po/queues';
import type { ApplyDecision, StageOutcome } from './observe.js';

/** One unit of engine work. */
export type EngineItem =
  /** An accepted worker result (stage-results). */
  | { kind: 'result'; pipelineId: number; message: StageResultMessage }
  /** The sweeper found this execution's lease or handler timeout passed. */
  | { kind: 'expiry'; pipelineId: number; stageId: number; executionId: string }
  /** Something may have made stages ready: creation, append, resume, cancel, a due retry, a lost event. */
  | { kind: 'pass'; pipelineId: number; cause?: string };

export type ItemOutcome =
  | { kind: 'result'; decision: ApplyDecision; stage?: PassStage }
  | { kind: 'expiry'; expired: false }
  | { kind: 'expiry'; expired: true; stage: PassStage; code: string; outcome: StageOutcome }
  | { kind: 'pass' }
  /** Its pipeline was not locked (another pass holds it, with skipLocked) or does not exist. */
  | { kind: 'skipped' };

const MAX_LOGS_PER_RESULT = 100;
/** The stages APP_MAX_ACTIVE_STAGES counts. */
const ACTIVE: ReadonlySet<StageStatus> = new Set<StageStatus>(['Pending', 'Running']);

/** A stage to dispatch once the batch is written: its new execution and what its message needs. */
export interface Dispatch {
  pipeline: LockedPipeline;
  stage: PassStage;
  executionId: string;
}

/**
 * The decisions of one engine batch, taken in memory between the read and the write of one
 * transaction: results fenced and applied (addendum §12, §13), expiries (§11), then one dispatcher
 * pass per locked pipeline (§7–§9). Items are decided in arrival order, so a duplicate result in
 * the same batch is fenced by the first one's effect exactly as it would be in a later batch.
 */
export class Batch {
  private readonly stageById = new Map<number, PassStage>();
  /** The status each changed stage was read with (the write is a compare-and-set on it). */
  private readonly readStatus = new Map<number, StageStatus>();
  private readonly changedStages = new Set<number>();
  private readonly outputs = new Map<number, string | null>();
  readonly ended: PassWrite['ended'] = [];
  readonly logs: PassWrite['logs'] = [];
  readonly contextChanges = new Map<number, { before: ContextEntryRow[]; after: ContextEntryRow[] }>();
  readonly appended: NewStageRow[] = [];
  readonly dispatches: Dispatch[] = [];
  readonly pipelineWrites: PassWrite['pipelines'] = [];
  readonly outcomes: ItemOutcome[] = [];
  private readonly plans = new Map<number, { skip: number[]; dispatch: number[] }>();

  constructor(
    readonly now: Date,
    readonly pipelines: Map<number, LockedPipeline>,
    readonly stages: Map<number, PassStage[]>,
    private readonly contexts: Map<number, ContextEntryRow[]>,
    private readonly random: () => number,
  ) {
    for (const list of stages.values()) for (const s of list) this.stageById.set(s.id, s);
  }

  /** Pipelines locked after the items were decided (their Throttled stages get freed slots): passes only. */
  addPipelines(pipelines: readonly LockedPipeline[], stages: Map<number, PassStage[]>): void {
    for (const p of pipelines) {
      this.pipelines.set(p.id, p);
      const list = stages.get(p.id) ?? [];
      this.stages.set(p.id, list);
      for (const s of list) this.stageById.set(s.id, s);
    }
  }

  decide(item: EngineItem): void {
    if (!this.pipelines.has(item.pipelineId)) {
      this.outcomes.push(item.kind === 'result' ? { kind: 'result', decision: { applied: false, reason: 'unknown_stage' } } : { kind: 'skipped' });
      return;
    }
    if (item.kind === 'result') this.outcomes.push(this.applyResult(item.message));
    else if (item.kind === 'expiry') this.outcomes.push(this.expire(item));
    else this.outcomes.push({ kind: 'pass' });
  }

  private touch(stage: PassStage): void {
    if (!this.readStatus.has(stage.id)) this.readStatus.set(stage.id, stage.status);
    this.changedStages.add(stage.id);
  }

  private applyResult(message: StageResultMessage): ItemOutcome {
    const { result } = message;
    const stage = this.stageById.get(message.stageId);
    if (!stage || stage.applicationId !== message.applicationId) return { kind: 'result', decision: { applied: false, reason: 'unknown_stage' } };
    const pipeline = this.pipelines.get(stage.pipelineId)!;
    const fenced = fenceResult(
      { pipelineStatus: pipeline.status, stageStatus: stage.status, currentExecutionId: stage.currentExecutionId, execution: stage.execution },
      { executionId: result.executionId, attempt: result.attempt, workerId: message.workerId },
    );
    if (fenced) return { kind: 'result', decision: { applied: false, reason: fenced }, stage };

    const logs = this.resultLogs(stage, message);
    this.appendWorkerStages(stage, result.appendedStages ?? [], logs);
    for (const l of logs) this.logs.push({ stageId: stage.id, pipelineId: stage.pipelineId, ...l });

    this.touch(stage);
    this.outputs.set(stage.id, result.result ?? null);
    this.endExecution(stage, 'result');
    const transition = resultTransition({ isSuccess: result.isSuccess ?? false, isWaitingForApproval: result.isWaitingForApproval ?? false });
    if (transition === 'fail') {
      const outcome = this.fail(stage, { errorCode: result.errorCode ?? null, retryable: result.retryable ?? null });
      const decision: ApplyDecision = { applied: true, outcome: outcome.status === 'RetryScheduled' ? 'retry_scheduled' : 'failed', errorCode: result.errorCode ?? null };
      return { kind: 'result', decision, stage };
    }
    stage.status = transition === 'park' ? 'WaitingForApproval' : 'Completed';
    if (stage.status === 'Completed') stage.finishedAt = this.now;
    return { kind: 'result', decision: { applied: true, outcome: transition === 'park' ? 'waiting_for_approval' : 'completed', errorCode: result.errorCode ?? null }, stage };
  }

  /**
   * §13: the result's log lines (at most 100) with every current sensitive value redacted, and its
   * context changes merged; a sensitive value before or after this result's changes is redacted.
   */
  private resultLogs(stage: PassStage, message: StageResultMessage): { message: string; logLevel: string; created: Date }[] {
    const updates = message.result.contextItems ?? [];
    const resultLogs = (message.result.logs ?? []).slice(0, MAX_LOGS_PER_RESULT);
    if (updates.length === 0 && resultLogs.length === 0) return [];
    const change = this.contextOf(stage.pipelineId);
    const before = change.after;
    const merged = mergeContext(before, updates);
    if (updates.length > 0) change.after = merged.items;
    const secrets = [...before, ...merged.items].filter((c) => c.isSensitive).map((c) => c.value);
    const logs = resultLogs.map((l) => ({
      message: redactSecrets(l.message, secrets),
      logLevel: l.logLevel ?? 'Information',
      created: l.created ? new Date(l.created) : this.now,
    }));
    if (merged.dropped.length > 0) {
      logs.push({ message: `Context items dropped (64-item limit): ${merged.dropped.join(', ')}`, logLevel: 'Warning', created: this.now });
    }
    return logs;
  }

  private contextOf(pipelineId: number): { before: ContextEntryRow[]; after: ContextEntryRow[] } {
    let change = this.contextChanges.get(pipelineId);
    if (!change) {
      const before = this.contexts.get(pipelineId);
      if (!before) throw new Error(`context of pipeline ${pipelineId} was not read`);
      this.contextChanges.set(pipelineId, (change = { before, after: before }));
    }
    return change;
  }

  /** The live context of a pipeline as this batch leaves it, when it changed here. */
  changedContext(pipelineId: number): ContextEntryRow[] | undefined {
    const change = this.contextChanges.get(pipelineId);
    return change && change.after !== change.before ? change.after : undefined;
  }

  /** §5.2: worker-appended stages go at the end of the pipeline, re-checked at apply time. */
  private appendWorkerStages(
    stage: PassStage,
    items: NonNullable<StageResultMessage['result']['appendedStages']>,
    logs: { message: string; logLevel: string; created: Date }[],
  ): void {
    if (items.length === 0) return;
    const existing = this.stages.get(stage.pipelineId)!;
    const pending = this.appended.filter((a) => a.pipelineId === stage.pipelineId);
    const names = [...existing.map((s) => s.name), ...pending.map((a) => a.name)];
    const added = items.map(stageFromInfo);
    const errors = checkAddedStages(names, added, '/appendedStages');
    if (errors.length > 0) {
      logs.push({ message: `Appended stages refused: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, logLevel: 'Warning', created: this.now });
      return;
    }
    added.forEach((s, i) =>
      this.appended.push({
        pipelineId: stage.pipelineId,
        applicationId: stage.applicationId,
        position: existing.length + pending.length + i,
        name: s.name,
        handlerName: s.handlerName,
        description: s.description,
        input: s.input,
        options: s.options,
        policies: s.policies,
        isEvent: s.isEvent,
        spanId: newSpanId(),
      }),
    );
  }

  /** Adds the inserted worker-appended stages (ids by `pipelineId:position`) to their pipelines, NotStarted. */
  addAppended(ids: Map<string, number>): void {
    for (const a of this.appended) {
      const id = ids.get(`${a.pipelineId}:${a.position}`);
      if (id === undefined) throw new Error(`appended stage ${a.pipelineId}:${a.position} was not inserted`);
      const stage: PassStage = {
        id,
        pipelineId: a.pipelineId,
        applicationId: a.applicationId,
        position: a.position,
        name: a.name,
        handlerName: a.handlerName,
        status: 'NotStarted',
        options: a.options,
        spanId: a.spanId,
        attempt: 0,
        retryAttempt: 0,
        failureCount: 0,
        lastErrorCode: null,
        lastFailedAt: null,
        failureDisposition: null,
        nextRetryAt: null,
        finishedAt: null,
        currentExecutionId: null,
        execution: null,
      };
      this.stages.get(a.pipelineId)!.push(stage);
      this.stageById.set(id, stage);
    }
  }

  /** §11: ends an execution whose lease or handler timeout passed (by the database clock) and fails its attempt. */
  private expire(item: { stageId: number; executionId: string }): ItemOutcome {
    const stage = this.stageById.get(item.stageId);
    if (!stage || stage.currentExecutionId !== item.executionId || !stage.execution || stage.execution.id !== item.executionId) {
      // Not (or no longer) the stage's current execution: only end it, if it is still expired.
      this.ended.push({ id: item.executionId, reason: 'LEASE_EXPIRED' });
      return { kind: 'expiry', expired: false };
    }
    const execution = stage.execution;
    const code = expiryOf(execution, this.now);
    if (!code) return { kind: 'expiry', expired: false };
    this.endExecution(stage, code);
    if (stage.status !== 'Running') return { kind: 'expiry', expired: false };
    this.touch(stage);
    const outcome = this.fail(stage, { errorCode: code, retryable: null });
    this.logs.push({
      stageId: stage.id,
      pipelineId: stage.pipelineId,
      message: expiryLogMessage(execution.id, execution.attempt, code),
      logLevel: 'Warning',
      created: this.now,
    });
    return { kind: 'expiry', expired: true, stage, code, outcome: outcome.status === 'RetryScheduled' ? 'retry_scheduled' : 'failed' };
  }

  private endExecution(stage: PassStage, reason: 'result' | 'LEASE_EXPIRED' | 'TIMEOUT'): void {
    this.ended.push({ id: stage.execution!.id, reason });
    stage.execution = { ...stage.execution!, endedAt: this.now, endReason: reason };
  }

  /** §7, §10: a failure moves the stage to RetryScheduled or Failed. */
  private fail(stage: PassStage, failure: { errorCode: string | null; retryable: boolean | null }): FailureOutcome {
    const outcome = applyFailure(stage.options, { retryAttempt: stage.retryAttempt, failureCount: stage.failureCount }, failure, this.now, this.random);
    stage.status = outcome.status;
    stage.retryAttempt = outcome.retryAttempt;
    stage.failureCount = outcome.failureCount;
    stage.lastErrorCode = outcome.lastErrorCode;
    stage.lastFailedAt = outcome.lastFailedAt;
    stage.failureDisposition = outcome.failureDisposition;
    stage.nextRetryAt = outcome.nextRetryAt;
    if (outcome.finishedAt) stage.finishedAt = outcome.finishedAt;
    return outcome;
  }

  /**
   * Candidates for a slot in each live pipeline (§9: ready NotStarted, Throttled, due retries), by
   * application, once every item is decided; what the applications' caps mean for them is plan's.
   */
  candidates(): Map<number, { id: number; status: StageStatus }[]> {
    const byApp = new Map<number, { id: number; status: StageStatus }[]>();
    for (const [pipelineId, pipeline] of this.pipelines) {
      if (isEnded(pipeline)) continue;
      const plan = planDispatch((this.stages.get(pipelineId) ?? []).map(toNode), this.now, null);
      this.plans.set(pipelineId, plan);
      let list = byApp.get(pipeline.applicationId);
      if (!list) byApp.set(pipeline.applicationId, (list = []));
      for (const id of plan.dispatch) list.push({ id, status: this.stageById.get(id)!.status });
    }
    return byApp;
  }

  /**
   * One dispatcher pass per locked pipeline (§7–§9): doomed stages Skipped, ready ones Pending with a
   * new execution (or Throttled beyond the application's free slots: `slots` per application, absent
   * = no cap), then the derived status and the next pass (the earliest retry still scheduled).
   */
  plan(candidates: Map<number, { id: number; status: StageStatus }[]>, slots: Map<number, number>): void {
    const allowed = new Set<number>();
    const throttled = new Set<number>();
    for (const [app, list] of candidates) {
      const { dispatch, throttle } = allocateSlots(list, slots.has(app) ? slots.get(app)! : null);
      dispatch.forEach((id) => allowed.add(id));
      throttle.forEach((id) => throttled.add(id));
    }
    for (const [pipelineId, pipeline] of this.pipelines) {
      const stages = this.stages.get(pipelineId) ?? [];
      if (isEnded(pipeline)) {
        this.pipelineWrites.push({ id: pipelineId, status: pipeline.status, finishedAt: null, nextPassAt: null });
        continue;
      }
      const skip = new Set(this.plans.get(pipelineId)?.skip ?? []);
      for (const stage of stages) {
        if (skip.has(stage.id)) {
          this.touch(stage);
          stage.status = 'Skipped';
          stage.finishedAt = this.now;
        } else if (allowed.has(stage.id)) {
          this.touch(stage);
          const executionId = randomUUID();
          stage.status = 'Pending';
          stage.currentExecutionId = executionId;
          stage.nextRetryAt = null;
          stage.execution = null;
          this.dispatches.push({ pipeline, stage, executionId });
        } else if (throttled.has(stage.id)) {
          this.touch(stage);
          stage.status = 'Throttled';
        }
      }
      const outcome = passOutcome(pipeline.status, stages, this.now);
      this.pipelineWrites.push({ id: pipelineId, status: outcome.status, finishedAt: outcome.finished ? this.now : null, nextPassAt: outcome.nextPassAt });
      pipeline.status = outcome.status;
    }
  }

  /**
   * Slots this batch's decisions freed in an application (a result or expiry that ended a Running
   * stage): the database still counts those stages as active until the batch is written.
   */
  freedSlots(applicationId: number): number {
    let freed = 0;
    for (const id of this.changedStages) {
      const stage = this.stageById.get(id)!;
      if (stage.applicationId !== applicationId) continue;
      if (ACTIVE.has(this.readStatus.get(id)!) && !ACTIVE.has(stage.status)) freed += 1;
    }
    return freed;
  }

  /** Every stage row this batch changed, for the compare-and-set write. */
  stageWrites(): StageWrite[] {
    return [...this.changedStages].map((id) => {
      const s = this.stageById.get(id)!;
      const write: StageWrite = {
        id,
        expected: this.readStatus.get(id)!,
        status: s.status,
        finishedAt: s.finishedAt,
        retryAttempt: s.retryAttempt,
        failureCount: s.failureCount,
        lastErrorCode: s.lastErrorCode,
        lastFailedAt: s.lastFailedAt,
        failureDisposition: s.failureDisposition,
        // A due retry Throttled at the cap keeps no retry time (§7).
        nextRetryAt: nextRetryAtOf(s.status, s.nextRetryAt),
        currentExecutionId: s.currentExecutionId,
      };
      if (this.outputs.has(id)) write.output = this.outputs.get(id)!;
      return write;
    });
  }

  /** Context writes: the difference between what was read and what the results left. */
  contextWrites(): { pipelineId: number; removed: string[]; upserted: ContextEntryRow[] }[] {
    const out: { pipelineId: number; removed: string[]; upserted: ContextEntryRow[] }[] = [];
    for (const [pipelineId, { before, after }] of this.contextChanges) {
      if (before === after) continue;
      const old = new Map(before.map((c) => [c.key, c]));
      const keep = new Set(after.map((c) => c.key));
      const removed = before.filter((c) => !keep.has(c.key)).map((c) => c.key);
      const upserted = after.filter((c) => {
        const prev = old.get(c.key);
        return !prev || prev.value !== c.value || prev.valueType !== c.valueType || prev.isSensitive !== c.isSensitive;
      });
      if (removed.length > 0 || upserted.length > 0) out.push({ pipelineId, removed, upserted });
    }
    return out;
  }
}

/** A pipeline a pass cannot change any more. */
function isEnded(p: LockedPipeline): boolean {
  return p.status === 'Completed' || p.status === 'Failed' || p.status === 'Cancelled';
}

function toNode(s: PassStage): StageNode {
  return {
    id: s.id,
    position: s.position,
    name: s.name,
    status: s.status,
    runNextIfFailed: s.options.runNextIfFailed,
    dependsOn: s.options.dependsOn,
    nextRetryAt: s.nextRetryAt,
  };
}
