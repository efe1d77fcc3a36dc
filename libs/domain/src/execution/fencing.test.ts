import { describe, expect, it } from 'vitest';
import type { ExecutionView, LeaseView } from './lease.js';
import { fenceResult } from './fencing.js';

const NOW = new Date('2025-03-01T12:00:00.000Z');
const view = (e: Partial<ExecutionView> = {}, v: Partial<LeaseView> = {}): LeaseView => ({
  pipelineStatus: 'Running',
  stageStatus: 'Running',
  currentExecutionId: 'exec-1',
  execution: { id: 'exec-1', attempt: 2, leaseOwner: 'w', leaseExpiresAt: new Date(NOW.getTime() + 30_000), endedAt: null, endReason: null, ...e },
  ...v,
});
const result = { executionId: 'exec-1', attempt: 2 };

describe('fencing of results (addendum §12)', () => {
  it('a result for the current, unended execution and its attempt on a Running stage is applied', () => {
    expect(fenceResult(view(), result)).toBeNull();
  });

  it('a result after leaseExpiresAt but before the sweeper ended the attempt is still applied', () => {
    expect(fenceResult(view({ leaseExpiresAt: new Date(NOW.getTime() - 10_000) }), result)).toBeNull();
  });

  it.each(['Completed', 'Failed', 'Cancelled'] as const)('the pipeline is %s (terminal) → pipeline_terminal, checked first', (p) => {
    expect(fenceResult(view({ endedAt: NOW }, { pipelineStatus: p, stageStatus: 'Cancelled' }), { executionId: 'x', attempt: 9 })).toBe('pipeline_terminal');
  });

  it.each(['Paused', 'Pending', 'NotStarted'] as const)('a %s pipeline is not terminal', (p) => {
    expect(fenceResult(view({}, { pipelineStatus: p }), result)).toBeNull();
  });

  it.each(['NotStarted', 'Pending', 'RetryScheduled', 'Throttled', 'WaitingForApproval', 'Completed', 'Failed', 'Skipped', 'Cancelled'] as const)(
    'the stage is %s, not Running → stage_not_running, before the execution checks',
    (st) => {
      expect(fenceResult(view({ endedAt: NOW }, { stageStatus: st }), { executionId: 'x', attempt: 9 })).toBe('stage_not_running');
    },
  );

  it('executionId is not the current execution → stale_execution, before the attempt check', () => {
    expect(fenceResult(view(), { executionId: 'exec-0', attempt: 9 })).toBe('stale_execution');
    expect(fenceResult(view({}, { currentExecutionId: 'exec-2' }), result)).toBe('stale_execution');
    expect(fenceResult(view({}, { execution: null }), result)).toBe('stale_execution');
  });

  it('attempt differs from the execution attempt → attempt_mismatch, before the ended check', () => {
    expect(fenceResult(view(), { executionId: 'exec-1', attempt: 1 })).toBe('attempt_mismatch');
    expect(fenceResult(view({ endedAt: NOW, endReason: 'result' }), { executionId: 'exec-1', attempt: 3 })).toBe('attempt_mismatch');
    expect(fenceResult(view({ attempt: null }), result)).toBe('attempt_mismatch');
  });

  it('the execution has ended → execution_ended (a duplicate of an applied result is discarded this way)', () => {
    expect(fenceResult(view({ endedAt: NOW, endReason: 'result' }), result)).toBe('execution_ended');
    expect(fenceResult(view({ endedAt: NOW, endReason: 'TIMEOUT' }), result)).toBe('execution_ended');
    expect(fenceResult(view({ endedAt: null, endReason: 'LEASE_EXPIRED' }), result)).toBe('execution_ended');
  });
});
