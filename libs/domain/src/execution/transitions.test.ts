import { describe, expect, it } from 'vitest';
import type { PipelineStatus, StageStatus } from '../statuses.js';
import { PIPELINE_STATUSES, STAGE_STATUSES, isTerminalPipeline, isTerminalStage } from '../statuses.js';
import {
  NOT_CREATED,
  PIPELINE_EVENTS,
  PIPELINE_STATUS_BY_STAGES,
  PIPELINE_TRANSITIONS,
  STAGE_EVENTS,
  STAGE_TRANSITIONS,
  canTransition,
  nextPipelineStatus,
  nextStageStatus,
  resumeEvent,
  slotTarget,
  stageStatusAfter,
  stageStatusesAllowing,
  type PipelineEvent,
  type PipelineFrom,
  type PipelineTarget,
  type StageEvent,
  type StageFrom,
} from './transitions.js';

const NON_TERMINAL: StageStatus[] = ['NotStarted', 'Throttled', 'Pending', 'Running', 'RetryScheduled', 'WaitingForApproval'];

/** Addendum §7's table, row by row, written out here independently of the implementation. */
const STAGE_ROWS: [StageFrom, StageEvent, StageStatus[], ('applyFailure' | 'admitStages')?][] = [
  [NOT_CREATED, 'create', ['NotStarted']],
  [NOT_CREATED, 'append', ['NotStarted']],
  ['NotStarted', 'dispatch', ['Pending']],
  ['NotStarted', 'throttle', ['Throttled']],
  ['Throttled', 'dispatch', ['Pending']],
  ['NotStarted', 'skip', ['Skipped']],
  ['Pending', 'lease', ['Running']],
  ['Running', 'renew', ['Running']],
  ['Running', 'park', ['WaitingForApproval']],
  ['Running', 'result-success', ['Completed']],
  ['Running', 'result-failure', ['RetryScheduled', 'Failed'], 'applyFailure'],
  ['Running', 'expire', ['RetryScheduled', 'Failed'], 'applyFailure'],
  ['RetryScheduled', 'retry-due', ['Pending', 'Throttled'], 'admitStages'],
  ['WaitingForApproval', 'approve', ['Completed']],
  ['WaitingForApproval', 'reject', ['Failed']],
  ...NON_TERMINAL.map((s): [StageFrom, StageEvent, StageStatus[]] => [s, 'cancel', ['Cancelled']]),
];

const STAGE_FROMS: StageFrom[] = [NOT_CREATED, ...STAGE_STATUSES];
const stagePairs = STAGE_FROMS.flatMap((from) => STAGE_EVENTS.map((event) => ({ from, event })));

describe('stage transitions (addendum §7), every (status, event) pair', () => {
  const allowed = stagePairs.filter(({ from, event }) => STAGE_ROWS.some(([f, e]) => f === from && e === event));
  const refused = stagePairs.filter(({ from, event }) => !STAGE_ROWS.some(([f, e]) => f === from && e === event));

  it('the addendum rows and the refusals cover all pairs', () => {
    expect(allowed).toHaveLength(STAGE_ROWS.length);
    expect(allowed.length + refused.length).toBe(STAGE_FROMS.length * STAGE_EVENTS.length);
  });

  it.each(STAGE_ROWS)('%s × %s → %j', (from, event, to, decidedBy) => {
    const expected = decidedBy ? { ok: true, to, decidedBy } : { ok: true, to };
    expect(nextStageStatus(from, event)).toEqual(expected);
    expect(canTransition(from, event)).toBe(true);
  });

  it.each(refused)('$from × $event is refused', ({ from, event }) => {
    const terminal = from !== NOT_CREATED && isTerminalStage(from);
    expect(nextStageStatus(from, event)).toEqual({ ok: false, reason: terminal ? 'stage_terminal' : 'no_transition' });
    expect(canTransition(from, event)).toBe(false);
    expect(() => stageStatusAfter(from, event)).toThrow(/no stage transition/);
  });
});

describe('the stage table as data', () => {
  it('has a row for every status of the StageStatus union, and nothing else but (none)', () => {
    expect(Object.keys(STAGE_TRANSITIONS).sort()).toEqual([NOT_CREATED, ...STAGE_STATUSES].sort());
  });

  it('every status is where some transition leads', () => {
    const targets = new Set(Object.values(STAGE_TRANSITIONS).flatMap((row) => Object.values(row).flatMap((t) => [...t.to])));
    for (const status of STAGE_STATUSES) expect(targets, status).toContain(status);
  });

  it('a status has no way out exactly when it is terminal (Completed, Failed, Skipped, Cancelled)', () => {
    for (const status of STAGE_STATUSES) {
      expect(STAGE_EVENTS.some((e) => canTransition(status, e)), status).toBe(!isTerminalStage(status));
    }
  });

  it('cancel moves every non-terminal stage (addendum §6: the pipeline and all its non-terminal stages)', () => {
    expect(stageStatusesAllowing('cancel').sort()).toEqual([...NON_TERMINAL].sort());
  });
});

describe('stageStatusAfter', () => {
  it('gives the one target of a one-target event', () => {
    expect(stageStatusAfter('Pending', 'lease')).toBe('Running');
    expect(stageStatusAfter(NOT_CREATED, 'append')).toBe('NotStarted');
  });

  it('takes the first target when the choosing rule says yes, else the second (§10 retry, §7 cap)', () => {
    expect(stageStatusAfter('Running', 'expire', true)).toBe('RetryScheduled');
    expect(stageStatusAfter('Running', 'result-failure', false)).toBe('Failed');
    expect(stageStatusAfter('RetryScheduled', 'retry-due', true)).toBe('Pending');
    expect(stageStatusAfter('RetryScheduled', 'retry-due', false)).toBe('Throttled');
  });

  it('refuses to pick for a two-target event without the choosing rule', () => {
    expect(() => stageStatusAfter('Running', 'result-failure')).toThrow(/applyFailure/);
  });
});

describe('slotTarget (§7 under APP_MAX_ACTIVE_STAGES)', () => {
  it('a candidate with a slot becomes Pending; at the cap a ready or due stage becomes Throttled and a Throttled one stays', () => {
    expect(slotTarget('NotStarted', true)).toBe('Pending');
    expect(slotTarget('Throttled', true)).toBe('Pending');
    expect(slotTarget('RetryScheduled', true)).toBe('Pending');
    expect(slotTarget('NotStarted', false)).toBe('Throttled');
    expect(slotTarget('RetryScheduled', false)).toBe('Throttled');
    expect(slotTarget('Throttled', false)).toBeNull();
  });

  it('a stage that is no candidate takes no slot', () => {
    for (const status of ['Pending', 'Running', 'WaitingForApproval', 'Completed', 'Cancelled'] as const) {
      expect(slotTarget(status, true)).toBeNull();
      expect(slotTarget(status, false)).toBeNull();
    }
  });
});

it('resume approved=true approves and approved=false rejects (§7)', () => {
  expect(resumeEvent(true)).toBe('approve');
  expect(resumeEvent(false)).toBe('reject');
});

/** Addendum §8's table. */
const PIPELINE_ROWS: [PipelineFrom, PipelineEvent, PipelineTarget][] = [
  [NOT_CREATED, 'create', 'NotStarted'],
  ['NotStarted', 'first-pass', 'derived'],
  // Before the first pass a stage change (an append) derives NotStarted again (rule 2).
  ['NotStarted', 'stage-change', 'derived'],
  ['Running', 'stage-change', 'derived'],
  ['Paused', 'stage-change', 'derived'],
  ['Pending', 'stage-change', 'derived'],
  ...(['NotStarted', 'Running', 'Paused', 'Pending'] as const).flatMap((s): [PipelineFrom, PipelineEvent, PipelineTarget][] => [
    [s, 'cancel', 'Cancelled'],
    // §6: the pipeline's status is unchanged by an append.
    [s, 'append', s],
  ]),
];

const PIPELINE_FROMS: PipelineFrom[] = [NOT_CREATED, ...PIPELINE_STATUSES];
const pipelinePairs = PIPELINE_FROMS.flatMap((from) => PIPELINE_EVENTS.map((event) => ({ from, event })));

describe('pipeline transitions (addendum §8), every (status, event) pair', () => {
  it.each(PIPELINE_ROWS)('%s × %s → %s', (from, event, to) => {
    expect(nextPipelineStatus(from, event)).toEqual({ ok: true, to });
  });

  const refused = pipelinePairs.filter(({ from, event }) => !PIPELINE_ROWS.some(([f, e]) => f === from && e === event));

  it.each(refused)('$from × $event is refused', ({ from, event }) => {
    const terminal = from !== NOT_CREATED && isTerminalPipeline(from);
    expect(nextPipelineStatus(from, event)).toEqual({ ok: false, reason: terminal ? 'pipeline_terminal' : 'no_transition' });
  });

  it('a terminal pipeline refuses cancel and append (409 pipeline_terminal)', () => {
    for (const s of ['Completed', 'Failed', 'Cancelled'] as const) {
      expect(nextPipelineStatus(s, 'cancel')).toEqual({ ok: false, reason: 'pipeline_terminal' });
      expect(nextPipelineStatus(s, 'append')).toEqual({ ok: false, reason: 'pipeline_terminal' });
    }
  });

  it('has a row for every status of the PipelineStatus union', () => {
    expect(Object.keys(PIPELINE_TRANSITIONS).sort()).toEqual([NOT_CREATED, ...PIPELINE_STATUSES].sort());
  });
});

describe('PIPELINE_STATUS_BY_STAGES (§8 rules 3–5)', () => {
  it('in order: Pending, Running or Throttled → Running; WaitingForApproval → Paused; RetryScheduled → Pending', () => {
    expect(PIPELINE_STATUS_BY_STAGES.map((r) => [[...r.anyOf].sort(), r.status])).toEqual([
      [['Pending', 'Running', 'Throttled'], 'Running'],
      [['WaitingForApproval'], 'Paused'],
      [['RetryScheduled'], 'Pending'],
    ]);
  });

  it('names every non-terminal stage status but NotStarted exactly once (NotStarted falls to rule 6)', () => {
    const named: StageStatus[] = PIPELINE_STATUS_BY_STAGES.flatMap((r) => [...r.anyOf]);
    expect([...named].sort()).toEqual(NON_TERMINAL.filter((s) => s !== 'NotStarted').sort());
    const derived: PipelineStatus[] = PIPELINE_STATUS_BY_STAGES.map((r) => r.status);
    for (const s of derived) expect(isTerminalPipeline(s)).toBe(false);
  });
});
