import { nextRetryAtOf, type StageStatus } from '@po/domain';
import type { StageResultMessage } from '@po/queues';
import type { ApplyDecision, StageOutcome } from './observe.js';
import type { LockedPipeline, PassStage, PassWrite, StageWrite } from './store.js';
import type { ContextEntryRow } from './store-contexts.js';
import type { NewStageRow } from './steps/append.js';
import { expire } from './steps/expire.js';
import { applyResult } from './steps/result.js';

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

/** The stages APP_MAX_ACTIVE_STAGES counts. */
const ACTIVE: ReadonlySet<StageStatus> = new Set<StageStatus>(['Pending', 'Running']);

/** A stage to dispatch once the batch is written: its new execution and what its message needs. */
export interface Dispatch {
  pipeline: LockedPipeline;
  stage: PassStage;
  executionId: string;
  /** Its key's load when it was admitted (decision 0132): orders its message behind lighter keys. */
  turn: number;
}

/**
 * The decisions of one engine batch, taken in memory between the read and the write of one
 * transaction: results fenced and applied (addendum §12, §13), expiries (§11), then one dispatcher
 * pass per locked pipeline (§7–§9). Items are decided in arrival order, so a duplicate result in
 * the same batch is fenced by the first one's effect exactly as it would be in a later batch.
 */
export class Batch {
  readonly stageById = new Map<number, PassStage>();
  /** The status each changed stage was read with (the write is a compare-and-set on it). */
  readonly readStatus = new Map<number, StageStatus>();
  readonly changedStages = new Set<number>();
  readonly outputs = new Map<number, string | null>();
  readonly ended: PassWrite['ended'] = [];
  readonly logs: PassWrite['logs'] = [];
  readonly contextChanges = new Map<number, { before: ContextEntryRow[]; after: ContextEntryRow[] }>();
  readonly appended: NewStageRow[] = [];
  readonly dispatches: Dispatch[] = [];
  readonly pipelineWrites: PassWrite['pipelines'] = [];
  readonly outcomes: ItemOutcome[] = [];
  readonly plans = new Map<number, { skip: number[]; dispatch: number[] }>();
  /** Pipelines whose next pass is due when a rate-limited handler has a token again (decision 0132). */
  readonly wakeAt = new Map<number, Date>();

  constructor(
    readonly now: Date,
    readonly pipelines: Map<number, LockedPipeline>,
    readonly stages: Map<number, PassStage[]>,
    readonly contexts: Map<number, ContextEntryRow[]>,
    readonly random: () => number,
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
    if (item.kind === 'result') this.outcomes.push(applyResult(this, item.message));
    else if (item.kind === 'expiry') this.outcomes.push(expire(this, item));
    else this.outcomes.push({ kind: 'pass' });
  }

  touch(stage: PassStage): void {
    if (!this.readStatus.has(stage.id)) this.readStatus.set(stage.id, stage.status);
    this.changedStages.add(stage.id);
  }

  contextOf(pipelineId: number): { before: ContextEntryRow[]; after: ContextEntryRow[] } {
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

  endExecution(stage: PassStage, reason: 'result' | 'LEASE_EXPIRED' | 'TIMEOUT'): void {
    this.ended.push({ id: stage.execution!.id, reason });
    stage.execution = { ...stage.execution!, endedAt: this.now, endReason: reason };
  }

  /**
   * Slots this batch's decisions freed in an application (a result or expiry that ended a Running
   * stage): the database still counts those stages as active until the batch is written.
   */
  freedSlots(applicationId: number): number {
    return this.freedStages(applicationId).length;
  }

  /** The stages behind freedSlots: their keys and handlers have room the database does not show yet. */
  freedStages(applicationId: number): PassStage[] {
    const freed: PassStage[] = [];
    for (const id of this.changedStages) {
      const stage = this.stageById.get(id)!;
      if (stage.applicationId !== applicationId) continue;
      if (ACTIVE.has(this.readStatus.get(id)!) && !ACTIVE.has(stage.status)) freed.push(stage);
    }
    return freed;
  }

  /** Applications in which this batch freed a slot. */
  freeingApplications(): Set<number> {
    const apps = new Set<number>();
    for (const id of this.changedStages) {
      const stage = this.stageById.get(id)!;
      if (ACTIVE.has(this.readStatus.get(id)!) && !ACTIVE.has(stage.status)) apps.add(stage.applicationId);
    }
    return apps;
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
