import type { PipelineStatus, StageStatus } from '../statuses.js';
import { isTerminalPipeline, isTerminalStage } from '../statuses.js';

/**
 * The stage state machine of addendum §7 as data: which event may move a stage in which status, and
 * to what. The conditions under which an event happens (readiness, doom, due retries, fencing,
 * the lease tables of §12) stay with the rules that decide them; this table is what they consult
 * for whether the move is legal and where it leads.
 */

/** The row of a stage or pipeline that does not exist yet (§7's and §8's "(none)"): creation starts there. */
export const NOT_CREATED = '(none)';
export type StageFrom = StageStatus | typeof NOT_CREATED;

export const STAGE_EVENTS = [
  /** Pipeline creation (legacy, idempotent, schedule). */
  'create',
  /** An append through the API or an applied worker append (§5.2). */
  'append',
  /** Ready under the application cap, or a slot freed for a Throttled stage (§7, §9). */
  'dispatch',
  /** Ready, but APP_MAX_ACTIVE_STAGES reached. */
  'throttle',
  /** Doomed: a dependency Failed, Skipped or Cancelled and runNextIfFailed false. */
  'skip',
  /** A lease acquire granted (§12 Acquire row 6). */
  'lease',
  /** A lease renewal granted (§12 Renew row 6). */
  'renew',
  /** An applied result with isWaitingForApproval=true, whatever isSuccess says (§13). */
  'park',
  /** An applied result with isSuccess=true. */
  'result-success',
  /** An applied failure result. */
  'result-failure',
  /** The sweeper ends the attempt: LEASE_EXPIRED or TIMEOUT (§11). */
  'expire',
  /** now ≥ nextRetryAt (§7, §10). */
  'retry-due',
  /** POST /stages/{id}/resume with approved=true. */
  'approve',
  /** POST /stages/{id}/resume with approved=false. */
  'reject',
  /** POST /pipelines/{id}/cancel, or a Replace overlap (§8, §14.5). */
  'cancel',
] as const;
export type StageEvent = (typeof STAGE_EVENTS)[number];

/** The rule that picks between two targets; the table only says which two are legal. */
export type TargetChooser = 'applyFailure' | 'admitStages';

/**
 * One allowed transition. `to` has one status, or two when another rule chooses: applyFailure
 * (the retry policy of §10: first when a retry is scheduled, else second) or admitStages (the
 * application cap of §7: first with a free slot, else second).
 */
export type StageTargets =
  | { readonly to: readonly [StageStatus] }
  | { readonly to: readonly [StageStatus, StageStatus]; readonly decidedBy: TargetChooser };

export type StageTable = { readonly [F in StageFrom]: { readonly [E in StageEvent]?: StageTargets } };

const FAILURE = { to: ['RetryScheduled', 'Failed'], decidedBy: 'applyFailure' } as const;
const CANCEL = { to: ['Cancelled'] } as const;

/** §7, row by row; a pair that is absent is refused. Terminal statuses have no way out. */
export const STAGE_TRANSITIONS = {
  [NOT_CREATED]: { create: { to: ['NotStarted'] }, append: { to: ['NotStarted'] } },
  NotStarted: {
    dispatch: { to: ['Pending'] },
    throttle: { to: ['Throttled'] },
    skip: { to: ['Skipped'] },
    cancel: CANCEL,
  },
  Throttled: { dispatch: { to: ['Pending'] }, cancel: CANCEL },
  Pending: { lease: { to: ['Running'] }, cancel: CANCEL },
  Running: {
    renew: { to: ['Running'] },
    park: { to: ['WaitingForApproval'] },
    'result-success': { to: ['Completed'] },
    'result-failure': FAILURE,
    expire: FAILURE,
    cancel: CANCEL,
  },
  RetryScheduled: { 'retry-due': { to: ['Pending', 'Throttled'], decidedBy: 'admitStages' }, cancel: CANCEL },
  WaitingForApproval: { approve: { to: ['Completed'] }, reject: { to: ['Failed'] }, cancel: CANCEL },
  Completed: {},
  Failed: {},
  Skipped: {},
  Cancelled: {},
} as const satisfies StageTable;

/** Why a (status, event) pair is refused: nothing moves a terminal stage; otherwise §7 has no such row. */
export type StageTransitionRefusal = { ok: false; reason: 'stage_terminal' | 'no_transition' };

export type StageTransition = ({ ok: true } & StageTargets) | StageTransitionRefusal;

const TABLE: StageTable = STAGE_TRANSITIONS;

/** The target (or the two targets another rule chooses between) of `event` on a stage in `from`, or a refusal. */
export function nextStageStatus(from: StageFrom, event: StageEvent): StageTransition {
  const targets = TABLE[from][event];
  if (targets) return { ok: true, ...targets };
  return { ok: false, reason: from !== NOT_CREATED && isTerminalStage(from) ? 'stage_terminal' : 'no_transition' };
}

export function canTransition(from: StageFrom, event: StageEvent): boolean {
  return TABLE[from][event] !== undefined;
}

/**
 * The status `event` leads to from `from`. For a two-target event, `chosen` is the choosing rule's
 * answer (true: the first target). Throws on a refused pair: callers only ask once their own checks
 * say the event happens, so a refusal here is a broken invariant, not an input to report.
 */
export function stageStatusAfter(from: StageFrom, event: StageEvent, chosen?: boolean): StageStatus {
  const targets = TABLE[from][event];
  if (!targets) throw new Error(`no stage transition from ${from} on ${event} (addendum §7)`);
  if (!('decidedBy' in targets)) return targets.to[0];
  if (chosen === undefined) throw new Error(`${event} from ${from} is decided by ${targets.decidedBy}`);
  return chosen ? targets.to[0] : targets.to[1];
}

/** The statuses from which `event` is allowed, in table order. */
export function stageStatusesAllowing(event: StageEvent): StageStatus[] {
  return (Object.keys(TABLE) as StageFrom[]).filter(
    (from): from is StageStatus => from !== NOT_CREATED && TABLE[from][event] !== undefined,
  );
}

/** The events of an applied result (§13); fencing lets a result through only where all of them are allowed. */
export const RESULT_EVENTS = ['park', 'result-success', 'result-failure'] as const satisfies readonly StageEvent[];
export type ResultEvent = (typeof RESULT_EVENTS)[number];

/** The resume request's decision as an event (§13 Resume). */
export function resumeEvent(approved: boolean): 'approve' | 'reject' {
  return approved ? 'approve' : 'reject';
}

/**
 * §7, §9: the status a dispatch candidate (ready NotStarted, Throttled, due RetryScheduled) takes
 * with a free slot (`slot`) or at the cap, or null when it stays as it is (a Throttled stage that
 * finds no slot keeps waiting) or is no candidate.
 */
export function slotTarget(status: StageStatus, slot: boolean): StageStatus | null {
  if (canTransition(status, 'retry-due')) return stageStatusAfter(status, 'retry-due', slot);
  const event = slot ? 'dispatch' : 'throttle';
  return canTransition(status, event) ? stageStatusAfter(status, event) : null;
}

// ---------------------------------------------------------------------------------------------
// Pipelines (addendum §8)

export type PipelineFrom = PipelineStatus | typeof NOT_CREATED;

export const PIPELINE_EVENTS = [
  /** Creation: legacy, idempotent or by a schedule. */
  'create',
  /** The dispatcher's first pass. */
  'first-pass',
  /** Any stage change after it (or an append before it). */
  'stage-change',
  /** POST cancel or a Replace overlap: the only way into Cancelled. */
  'cancel',
  /** POST /pipelines/{id}/stages: the pipeline's status is unchanged (§6). */
  'append',
] as const;
export type PipelineEvent = (typeof PIPELINE_EVENTS)[number];

/** `derived`: the status derivePipelineStatus gives (§8 rules 1–6); otherwise that status. */
export type PipelineTarget = PipelineStatus | 'derived';

export type PipelineTable = { readonly [F in PipelineFrom]: { readonly [E in PipelineEvent]?: PipelineTarget } };

/**
 * §8's table. A stage change on a NotStarted pipeline is derived too: rule 2 keeps it NotStarted
 * until the first pass. A terminal pipeline refuses everything (409 `pipeline_terminal`).
 */
export const PIPELINE_TRANSITIONS = {
  [NOT_CREATED]: { create: 'NotStarted' },
  NotStarted: { 'first-pass': 'derived', 'stage-change': 'derived', cancel: 'Cancelled', append: 'NotStarted' },
  Running: { 'stage-change': 'derived', cancel: 'Cancelled', append: 'Running' },
  Paused: { 'stage-change': 'derived', cancel: 'Cancelled', append: 'Paused' },
  Pending: { 'stage-change': 'derived', cancel: 'Cancelled', append: 'Pending' },
  Completed: {},
  Failed: {},
  Cancelled: {},
} as const satisfies PipelineTable;

export type PipelineTransition = { ok: true; to: PipelineTarget } | { ok: false; reason: 'pipeline_terminal' | 'no_transition' };

const PIPELINE_TABLE: PipelineTable = PIPELINE_TRANSITIONS;

export function nextPipelineStatus(from: PipelineFrom, event: PipelineEvent): PipelineTransition {
  const to = PIPELINE_TABLE[from][event];
  if (to !== undefined) return { ok: true, to };
  return { ok: false, reason: from !== NOT_CREATED && isTerminalPipeline(from) ? 'pipeline_terminal' : 'no_transition' };
}

/**
 * §8 rules 3–5 as data, first match wins: the stage statuses whose presence decides a pipeline
 * that is dispatched and not finished. None of them present → Running (rule 6: NotStarted stages
 * about to be dispatched).
 */
export const PIPELINE_STATUS_BY_STAGES = [
  { anyOf: ['Pending', 'Running', 'Throttled'], status: 'Running' },
  { anyOf: ['WaitingForApproval'], status: 'Paused' },
  { anyOf: ['RetryScheduled'], status: 'Pending' },
] as const satisfies readonly { anyOf: readonly StageStatus[]; status: PipelineStatus }[];
