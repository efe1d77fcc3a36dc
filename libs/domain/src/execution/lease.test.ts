import { describe, expect, it } from 'vitest';
import type { ExecutionView, LeaseView } from './lease.js';
import { LEASE_SECONDS, decideAcquire, decideRenew } from './lease.js';

const NOW = new Date('2025-03-01T12:00:00.000Z');
const plus = (s: number) => new Date(NOW.getTime() + s * 1000);
const EXEC = 'exec-1';
const WORKER = 'worker-1';

/** A Pending stage whose current execution was dispatched and never leased. */
const pending = (e: Partial<ExecutionView> = {}, v: Partial<LeaseView> = {}): LeaseView => ({
  pipelineStatus: 'Running',
  stageStatus: 'Pending',
  currentExecutionId: EXEC,
  execution: { id: EXEC, attempt: null, leaseOwner: null, leaseExpiresAt: null, endedAt: null, endReason: null, ...e },
  ...v,
});
/** A Running stage leased by WORKER until NOW + 30 s, attempt 2. */
const running = (e: Partial<ExecutionView> = {}, v: Partial<LeaseView> = {}): LeaseView =>
  pending({ attempt: 2, leaseOwner: WORKER, leaseExpiresAt: plus(30), ...e }, { stageStatus: 'Running', ...v });

const acquire = (view: LeaseView, executionId = EXEC, stageAttempt = 1) => decideAcquire(view, { executionId }, stageAttempt, NOW);
const renew = (view: LeaseView, executionId = EXEC, workerId = WORKER) => decideRenew(view, { executionId, workerId }, NOW);
const refused = (reason: string) => ({ granted: false, reason });

describe('lease acquire (addendum §12 Acquire table)', () => {
  it('the lease lasts 60 seconds', () => {
    expect(LEASE_SECONDS).toBe(60);
  });

  it('row 1: pipeline Cancelled → pipeline_cancelled (before every other row)', () => {
    expect(acquire(pending({}, { pipelineStatus: 'Cancelled', stageStatus: 'Cancelled' }), 'other')).toEqual(refused('pipeline_cancelled'));
    expect(acquire(pending({}, { pipelineStatus: 'Cancelled' }))).toEqual(refused('pipeline_cancelled'));
  });

  it.each(['Completed', 'Failed', 'Skipped', 'Cancelled'] as const)('row 2: stage %s (terminal) → stage_terminal, before row 3', (st) => {
    expect(acquire(pending({ endedAt: NOW, endReason: 'result' }, { stageStatus: st }), 'other')).toEqual(refused('stage_terminal'));
  });

  it('row 2 applies to a terminal stage of a pipeline that is Completed or Failed', () => {
    expect(acquire(pending({}, { pipelineStatus: 'Completed', stageStatus: 'Completed' }))).toEqual(refused('stage_terminal'));
  });

  it('row 3: executionId is not the stage current execution → stale_execution', () => {
    expect(acquire(pending(), 'exec-old')).toEqual(refused('stale_execution'));
    expect(acquire(pending({}, { currentExecutionId: 'exec-2' }))).toEqual(refused('stale_execution'));
    expect(acquire(pending({}, { currentExecutionId: null }))).toEqual(refused('stale_execution'));
    expect(acquire(pending({}, { execution: null }))).toEqual(refused('stale_execution'));
  });

  it('row 3: the current execution has ended → stale_execution, before rows 4 and 5 (an unexpired lease does not matter)', () => {
    expect(acquire(running({ endedAt: NOW, endReason: 'result' }, { stageStatus: 'WaitingForApproval' }))).toEqual(refused('stale_execution'));
    expect(acquire(running({ endedAt: NOW, endReason: 'LEASE_EXPIRED', leaseExpiresAt: plus(-1) }, { stageStatus: 'RetryScheduled' }))).toEqual(refused('stale_execution'));
  });

  it('row 4: an unexpired lease is held → lease_held, for any caller, the same one included', () => {
    expect(acquire(running())).toEqual(refused('lease_held'));
    expect(acquire(running({ leaseOwner: 'worker-2' }))).toEqual(refused('lease_held'));
    expect(acquire(running({ leaseExpiresAt: new Date(NOW.getTime() + 1) }))).toEqual(refused('lease_held'));
  });

  it('row 5: the lease has expired but the sweeper has not processed it → lease_expired (expiry instant included)', () => {
    expect(acquire(running({ leaseExpiresAt: plus(-5) }))).toEqual(refused('lease_expired'));
    expect(acquire(running({ leaseExpiresAt: NOW }))).toEqual(refused('lease_expired'));
  });

  it('row 6: otherwise (stage Pending) → granted, attempt = stage attempt + 1, leaseExpiresAt = now + 60 s', () => {
    expect(acquire(pending(), EXEC, 0)).toEqual({ granted: true, attempt: 1, leaseExpiresAt: plus(60) });
    expect(acquire(pending(), EXEC, 3)).toEqual({ granted: true, attempt: 4, leaseExpiresAt: plus(60) });
  });

  it('row 6 needs the stage to be Pending: an unleased current execution on another stage status is stale', () => {
    for (const st of ['NotStarted', 'Throttled', 'RetryScheduled', 'WaitingForApproval', 'Running'] as const) {
      expect(acquire(pending({}, { stageStatus: st }))).toEqual(refused('stale_execution'));
    }
  });
});

describe('lease renew (addendum §12 Renew table, §11, §19.3)', () => {
  it('row 1: pipeline Cancelled → pipeline_cancelled (before every other row)', () => {
    expect(renew(running({}, { pipelineStatus: 'Cancelled', stageStatus: 'Cancelled' }), 'other', 'other')).toEqual(refused('pipeline_cancelled'));
  });

  it.each(['Completed', 'Failed', 'Skipped', 'Cancelled'] as const)('row 2: stage %s → stage_terminal, before row 3', (st) => {
    expect(renew(running({ endedAt: NOW, endReason: 'result' }, { stageStatus: st }), 'other')).toEqual(refused('stage_terminal'));
  });

  it('row 3: executionId not current → stale_execution, before rows 4 and 5', () => {
    expect(renew(running({ leaseExpiresAt: plus(-1) }), 'exec-old', 'other')).toEqual(refused('stale_execution'));
    expect(renew(running({}, { currentExecutionId: 'exec-2' }))).toEqual(refused('stale_execution'));
    expect(renew(running({}, { execution: null }))).toEqual(refused('stale_execution'));
  });

  it('row 3: the execution ended by an applied result → stale_execution, even with its lease expired', () => {
    expect(renew(running({ endedAt: NOW, endReason: 'result' }, { stageStatus: 'WaitingForApproval' }))).toEqual(refused('stale_execution'));
    expect(renew(running({ endedAt: NOW, endReason: 'result', leaseExpiresAt: plus(-1) }, { stageStatus: 'WaitingForApproval' }))).toEqual(refused('stale_execution'));
  });

  it('row 4: the lease expired → lease_expired (expiry instant included), before row 5 (another worker)', () => {
    expect(renew(running({ leaseExpiresAt: plus(-1) }))).toEqual(refused('lease_expired'));
    expect(renew(running({ leaseExpiresAt: NOW }))).toEqual(refused('lease_expired'));
    expect(renew(running({ leaseExpiresAt: plus(-1) }), EXEC, 'worker-2')).toEqual(refused('lease_expired'));
  });

  it.each(['LEASE_EXPIRED', 'TIMEOUT'] as const)('row 4: the execution ended by %s → lease_expired, even by another worker', (reason) => {
    const view = running({ endedAt: NOW, endReason: reason, leaseExpiresAt: plus(30) }, { stageStatus: 'RetryScheduled' });
    expect(renew(view)).toEqual(refused('lease_expired'));
    expect(renew(view, EXEC, 'worker-2')).toEqual(refused('lease_expired'));
  });

  it('row 5: the execution was never leased → not_owner', () => {
    expect(renew(pending())).toEqual(refused('not_owner'));
  });

  it('row 5: an execution with a lease but no attempt number counts as never leased → not_owner', () => {
    expect(renew(running({ attempt: null }))).toEqual(refused('not_owner'));
  });

  it('row 5: leased by another worker → not_owner', () => {
    expect(renew(running(), EXEC, 'worker-2')).toEqual(refused('not_owner'));
  });

  it('row 6: otherwise → granted, same attempt, leaseExpiresAt = max(current expiry, now + 60 s)', () => {
    expect(renew(running({ leaseExpiresAt: plus(30) }))).toEqual({ granted: true, attempt: 2, leaseExpiresAt: plus(60) });
  });

  it('§19.3: a renewal never shortens the lease', () => {
    expect(renew(running({ leaseExpiresAt: plus(90) }))).toEqual({ granted: true, attempt: 2, leaseExpiresAt: plus(90) });
  });
});
