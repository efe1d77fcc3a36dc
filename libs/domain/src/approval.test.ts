import { describe, expect, it } from 'vitest';
import { decideResume, rejectionLogMessage } from './approval.js';

describe('resume decisions (addendum §13)', () => {
  it('WaitingForApproval takes the decision', () => {
    expect(decideResume({ status: 'WaitingForApproval', approved: null }, true)).toEqual({ kind: 'apply' });
    expect(decideResume({ status: 'WaitingForApproval', approved: null }, false)).toEqual({ kind: 'apply' });
  });

  it('the same decision again is a no-op, whatever the stage status now is', () => {
    expect(decideResume({ status: 'Completed', approved: true }, true)).toEqual({ kind: 'repeat' });
    expect(decideResume({ status: 'Failed', approved: false }, false)).toEqual({ kind: 'repeat' });
  });

  it('the opposite decision conflicts', () => {
    expect(decideResume({ status: 'Completed', approved: true }, false)).toEqual({ kind: 'conflict', recorded: true });
  });

  it('a stage that is not waiting and has no decision refuses', () => {
    for (const status of ['NotStarted', 'Running', 'Pending', 'Completed', 'Cancelled'] as const) {
      expect(decideResume({ status, approved: null }, true)).toEqual({ kind: 'not_waiting' });
    }
  });

  it('writes "Rejected: reason", or "Rejected" without a reason', () => {
    expect(rejectionLogMessage('too risky')).toBe('Rejected: too risky');
    expect(rejectionLogMessage(null)).toBe('Rejected');
    expect(rejectionLogMessage('')).toBe('Rejected');
  });
});
