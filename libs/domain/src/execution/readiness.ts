import type { StageStatus } from '../statuses.js';
import { isTerminalStage } from '../statuses.js';
import { canTransition, slotTarget, stageStatusAfter } from './transitions.js';

/** The part of a stage that readiness, doom and dispatch need (addendum §7, §9). */
export interface StageNode {
  id: number;
  position: number;
  name: string;
  status: StageStatus;
  runNextIfFailed: boolean;
  dependsOn: string[];
  /** For RetryScheduled stages: when the retry is due. */
  nextRetryAt: Date | null;
}

/** Dependency statuses that let a runNextIfFailed stage continue and doom any other (addendum §7). */
const FAILED_LIKE: ReadonlySet<StageStatus> = new Set<StageStatus>(['Failed', 'Skipped', 'Cancelled']);

export function isFailedLike(status: StageStatus): boolean {
  return FAILED_LIKE.has(status);
}

/**
 * dependsOn names → every stage EARLIER in position with that name (a name may match several);
 * empty dependsOn → all earlier stages (addendum §6, §7). Result is in position order.
 */
export function dependenciesOf(stages: readonly StageNode[], stage: StageNode): StageNode[] {
  const earlier = stages.filter((s) => s.position < stage.position);
  const deps =
    stage.dependsOn.length === 0 ? earlier : earlier.filter((s) => stage.dependsOn.includes(s.name));
  return deps.sort((a, b) => a.position - b.position);
}

/**
 * §7 Ready: all dependencies Completed; or all terminal, at least one Failed/Skipped/Cancelled, and
 * runNextIfFailed. A stage with no dependencies is ready.
 */
export function isReady(stages: readonly StageNode[], stage: StageNode): boolean {
  const deps = dependenciesOf(stages, stage);
  if (deps.every((d) => d.status === 'Completed')) return true;
  return (
    stage.runNextIfFailed &&
    deps.every((d) => isTerminalStage(d.status)) &&
    deps.some((d) => isFailedLike(d.status))
  );
}

/** §7 Doomed: some dependency Failed/Skipped/Cancelled and runNextIfFailed false. */
export function isDoomed(stages: readonly StageNode[], stage: StageNode): boolean {
  if (stage.runNextIfFailed) return false;
  return dependenciesOf(stages, stage).some((d) => isFailedLike(d.status));
}

export interface DispatchPlan {
  /** NotStarted stages that are doomed, propagation included (fixpoint); ascending id. */
  skip: number[];
  /** Stages to move to Pending with a new execution, ascending id, at most `slots`. */
  dispatch: number[];
  /** Ready NotStarted and due RetryScheduled stages that did not fit → Throttled; ascending id. */
  throttle: number[];
}

/**
 * A RetryScheduled stage is due when now ≥ nextRetryAt (§7). A RetryScheduled stage without
 * nextRetryAt cannot occur; it is treated as due so that it can never be stuck.
 */
export function isRetryDue(stage: Pick<StageNode, 'status' | 'nextRetryAt'>, now: Date): boolean {
  if (stage.status !== 'RetryScheduled') return false;
  return stage.nextRetryAt === null || stage.nextRetryAt.getTime() <= now.getTime();
}

/**
 * Marks doomed stages Skipped (the §7 `skip` event: NotStarted ones) until nothing changes; returns
 * the new statuses and the skipped ids.
 */
export function propagateDoom(stages: readonly StageNode[]): { stages: StageNode[]; skipped: number[] } {
  let current = stages.map((s) => ({ ...s }));
  const skipped: number[] = [];
  for (;;) {
    const doomed = current.filter((s) => canTransition(s.status, 'skip') && isDoomed(current, s)).map((s) => s.id);
    if (doomed.length === 0) break;
    skipped.push(...doomed);
    const ids = new Set(doomed);
    current = current.map((s) => (ids.has(s.id) ? { ...s, status: stageStatusAfter(s.status, 'skip') } : s));
  }
  return { stages: current, skipped: skipped.sort((a, b) => a - b) };
}

/**
 * §7, §9: whether a stage would take a free slot now. A stage the table lets `retry-due` move does
 * when its retry is due; one it lets `dispatch` move does when ready, except a Throttled one, which
 * was ready when it was throttled and stays so (terminal dependencies never change).
 */
function isCandidate(stages: readonly StageNode[], stage: StageNode, now: Date): boolean {
  if (canTransition(stage.status, 'retry-due')) return isRetryDue(stage, now);
  if (!canTransition(stage.status, 'dispatch')) return false;
  return stage.status === 'Throttled' || isReady(stages, stage);
}

/**
 * One dispatcher pass over a pipeline's stages (§7, §9). `slots` = how many more stages the
 * application may have Pending+Running, or null for no cap (a negative value counts as 0).
 * Candidates (ready NotStarted, Throttled, due RetryScheduled) are taken oldest stage id first.
 * Readiness is evaluated after applying `skip`.
 */
export function planDispatch(stages: readonly StageNode[], now: Date, slots: number | null): DispatchPlan {
  const { stages: after, skipped } = propagateDoom(stages);
  const candidates = after.filter((s) => isCandidate(after, s, now)).sort((a, b) => a.id - b.id);
  const room = slots === null ? candidates.length : Math.max(0, Math.floor(slots));
  const dispatch = candidates.slice(0, room).map((s) => s.id);
  const throttle = candidates
    .slice(room)
    .filter((s) => slotTarget(s.status, false) !== null)
    .map((s) => s.id);
  return { skip: skipped, dispatch, throttle };
}
