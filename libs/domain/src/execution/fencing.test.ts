import { describe, expect, it } from 'vitest';
import type { ExecutionView, LeaseView } from './lease.js';
import { fenceResult, isIssuedExecutionId } from './fencing.js';

const NOW = new Date('2025-03-01T12:00:00.000Z');
const view = (e: Partial<ExecutionView> = {}, v: Partial<LeaseView> = {}): LeaseView => ({
  pipelineStatus: 'Running',
  stageStatus: 'Running',
  currentExecutionId: 'exec-1',
  execution: { id: 'exec-1', attempt: 2, leaseOwner: 'w', leaseExpiresAt: new Date(NOW.getTime() + 30_000), endedAt: null, endReason: null, ...e },
  ...v,
});
const result = { executionId: 'exec-1', attempt: 2, workerId: 'w' };

describe('fencing of results (addendum §12)', () => {
  it('a result of the lease holder for the current, unended execution and its attempt on a Running stage is applied', () => {
    expect(fenceResult(view(), result)).toBeNull();
  });

  it('a result after leaseExpiresAt but before the sweeper ended the attempt is still applied', () => {
    expect(fenceResult(view({ leaseExpiresAt: new Date(NOW.getTime() - 10_000) }), result)).toBeNull();
  });

  it.each(['Completed', 'Failed', 'Cancelled'] as const)('the pipeline is %s (terminal) → pipeline_terminal, checked first', (p) => {
    expect(fenceResult(view({ endedAt: NOW }, { pipelineStatus: p, stageStatus: 'Cancelled' }), { executionId: 'x', attempt: 9, workerId: 'other' })).toBe('pipeline_terminal');
  });

  it.each(['Paused', 'Pending', 'NotStarted'] as const)('a %s pipeline is not terminal', (p) => {
    expect(fenceResult(view({}, { pipelineStatus: p }), result)).toBeNull();
  });

  it.each(['NotStarted', 'Pending', 'RetryScheduled', 'Throttled', 'WaitingForApproval', 'Completed', 'Failed', 'Skipped', 'Cancelled'] as const)(
    'the stage is %s, not Running → stage_not_running, before the execution checks',
    (st) => {
      expect(fenceResult(view({ endedAt: NOW }, { stageStatus: st }), { executionId: 'x', attempt: 9, workerId: 'other' })).toBe('stage_not_running');
    },
  );

  it('executionId is not the current execution → stale_execution, before the attempt check', () => {
    expect(fenceResult(view(), { executionId: 'exec-0', attempt: 9, workerId: 'other' })).toBe('stale_execution');
    expect(fenceResult(view({}, { currentExecutionId: 'exec-2' }), result)).toBe('stale_execution');
    expect(fenceResult(view({}, { execution: null }), result)).toBe('stale_execution');
  });

  it('attempt differs from the execution attempt → attempt_mismatch, before the ended check', () => {
    expect(fenceResult(view(), { executionId: 'exec-1', attempt: 1, workerId: 'other' })).toBe('attempt_mismatch');
    expect(fenceResult(view({ endedAt: NOW, endReason: 'result' }), { executionId: 'exec-1', attempt: 3, workerId: 'other' })).toBe('attempt_mismatch');
    expect(fenceResult(view({ attempt: null }), result)).toBe('attempt_mismatch');
  });

  it('the execution has ended → execution_ended (a duplicate of an applied result is discarded this way)', () => {
    expect(fenceResult(view({ endedAt: NOW, endReason: 'result' }), result)).toBe('execution_ended');
    expect(fenceResult(view({ endedAt: NOW, endReason: 'TIMEOUT' }), result)).toBe('execution_ended');
    expect(fenceResult(view({ endedAt: null, endReason: 'LEASE_EXPIRED' }), result)).toBe('execution_ended');
    expect(fenceResult(view({ endedAt: NOW, endReason: 'result' }), { ...result, workerId: 'other' })).toBe('execution_ended');
  });

  it('posted by another worker than the lease holder → not_lease_holder, checked last', () => {
    expect(fenceResult(view(), { ...result, workerId: 'w2' })).toBe('not_lease_holder');
    // Owner ids are compared exactly: no case folding, no trimming.
    expect(fenceResult(view(), { ...result, workerId: 'W' })).toBe('not_lease_holder');
    expect(fenceResult(view(), { ...result, workerId: 'w ' })).toBe('not_lease_holder');
    // A Running execution without an owner was never leased: nobody holds it.
    expect(fenceResult(view({ leaseOwner: null }), result)).toBe('not_lease_holder');
  });
});

describe('execution ids a dispatch could have issued (addendum §9: UUIDs)', () => {
  it.each(['3b241101-e2bb-4255-8caf-4136c566a962', '3B241101-E2BB-4255-8CAF-4136C566A962'])('%s is one', (id) => {
    expect(isIssuedExecutionId(id)).toBe(true);
  });

  it.each(['', 'a:b', 'e-1', ' 3b241101-e2bb-4255-8caf-4136c566a962', '3b241101-e2bb-4255-8caf-4136c566a962\n', '3b241101e2bb42558caf4136c566a962', 'é'.repeat(36)])(
    '%j is not',
    (id) => {
      expect(isIssuedExecutionId(id)).toBe(false);
    },
  );
});
