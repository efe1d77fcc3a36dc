import { randomUUID } from 'node:crypto';
import { passOutcome, planDispatch, slotOrder, slotTarget, stageStatusAfter, type Admission, type StageNode, type StageStatus } from '@po/domain';
import type { Batch } from '../batch.js';
import type { LockedPipeline, PassStage } from '../store.js';

/**
 * A dispatcher pass (addendum §7–§9) over each pipeline of a batch, once every item is decided:
 * doomed stages Skipped, ready ones (NotStarted, Throttled, due retries) Pending with a new
 * execution or Throttled beyond the application's free slots, then the pipeline's derived status
 * and its next pass. Its SQL is store.ts's batch write; its messages are published after the commit
 * (engine.ts).
 */

/**
 * Candidates for a slot in each live pipeline (§9: ready NotStarted, Throttled, due retries), by
 * application, once every item is decided; what the applications' caps mean for them is plan's.
 */
export function candidates(b: Batch): Map<number, { id: number; status: StageStatus }[]> {
  const byApp = new Map<number, { id: number; status: StageStatus }[]>();
  for (const [pipelineId, pipeline] of b.pipelines) {
    if (isEnded(pipeline)) continue;
    const plan = planDispatch((b.stages.get(pipelineId) ?? []).map(toNode), b.now, null);
    b.plans.set(pipelineId, plan);
    let list = byApp.get(pipeline.applicationId);
    if (!list) byApp.set(pipeline.applicationId, (list = []));
    for (const id of plan.dispatch) list.push({ id, status: b.stageById.get(id)!.status });
  }
  return byApp;
}

/**
 * One dispatcher pass per locked pipeline (§7–§9): doomed stages Skipped, ready ones Pending with a
 * new execution (or Throttled where flow control holds them: `admitted` per application, absent =
 * no gate, decision 0132), then the derived status and the next pass (the earliest retry still
 * scheduled, or a rate-limited handler's next token).
 */
export function plan(b: Batch, candidates: Map<number, { id: number; status: StageStatus }[]>, admitted: Map<number, Admission>): void {
  const allowed = new Map<number, number>();
  const throttled = new Set<number>();
  for (const [app, list] of candidates) {
    const admission = admitted.get(app);
    if (!admission) {
      for (const c of [...list].sort(slotOrder)) allowed.set(c.id, 0);
      continue;
    }
    admission.dispatch.forEach((id) => allowed.set(id, admission.turns.get(id) ?? 0));
    admission.throttle.forEach((id) => throttled.add(id));
  }
  for (const [pipelineId, pipeline] of b.pipelines) {
    const stages = b.stages.get(pipelineId) ?? [];
    if (isEnded(pipeline)) {
      b.pipelineWrites.push({ id: pipelineId, status: pipeline.status, finishedAt: null, nextPassAt: null });
      continue;
    }
    const skip = new Set(b.plans.get(pipelineId)?.skip ?? []);
    for (const stage of stages) {
      if (skip.has(stage.id)) {
        b.touch(stage);
        stage.status = stageStatusAfter(stage.status, 'skip');
        stage.finishedAt = b.now;
      } else if (allowed.has(stage.id)) {
        b.touch(stage);
        const executionId = randomUUID();
        stage.status = slotTarget(stage.status, true)!;
        stage.currentExecutionId = executionId;
        stage.nextRetryAt = null;
        stage.execution = null;
        b.dispatches.push({ pipeline, stage, executionId, turn: allowed.get(stage.id)! });
      } else if (throttled.has(stage.id)) {
        b.touch(stage);
        stage.status = slotTarget(stage.status, false) ?? stage.status;
      }
    }
    const outcome = passOutcome(pipeline.status, stages, b.now);
    const wake = b.wakeAt.get(pipelineId);
    const nextPassAt = wake && !outcome.finished && (outcome.nextPassAt === null || wake < outcome.nextPassAt) ? wake : outcome.nextPassAt;
    b.pipelineWrites.push({ id: pipelineId, status: outcome.status, finishedAt: outcome.finished ? b.now : null, nextPassAt });
    pipeline.status = outcome.status;
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
