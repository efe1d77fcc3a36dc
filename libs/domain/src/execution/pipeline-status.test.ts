import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PipelineStatus, StageStatus } from '../statuses.js';
import { PIPELINE_STATUSES, STAGE_STATUSES, isTerminalPipeline, isTerminalStage } from '../statuses.js';
import { derivePipelineStatus } from './pipeline-status.js';

const derive = (stageStatuses: StageStatus[], dispatched = true, current: PipelineStatus = 'Running') =>
  derivePipelineStatus({ current, dispatched, stageStatuses });

describe('pipeline status derivation (addendum §8)', () => {
  it('a terminal pipeline never changes: Cancelled stays Cancelled, Completed and Failed stay as they are', () => {
    expect(derive(['Running', 'NotStarted'], true, 'Cancelled')).toBe('Cancelled');
    expect(derive(['Completed', 'Cancelled'], true, 'Cancelled')).toBe('Cancelled');
    expect(derive(['Failed'], true, 'Completed')).toBe('Completed');
    expect(derive(['Running'], true, 'Failed')).toBe('Failed');
  });

  describe('rule 1: all stages terminal', () => {
    it('→ Failed if any stage is Failed', () => {
      expect(derive(['Completed', 'Failed', 'Skipped'])).toBe('Failed');
    });
    it('→ Completed otherwise (Skipped and Cancelled stages do not fail the pipeline)', () => {
      expect(derive(['Completed', 'Skipped', 'Cancelled'])).toBe('Completed');
      expect(derive(['Completed'])).toBe('Completed');
    });
    it('applies before rule 2: an undispatched pipeline whose stages are all terminal is terminal', () => {
      expect(derive(['Completed'], false, 'NotStarted')).toBe('Completed');
      expect(derive(['Failed'], false, 'NotStarted')).toBe('Failed');
    });
    it('an empty stage list does not throw and counts as Completed', () => {
      expect(derive([])).toBe('Completed');
      expect(derive([], false, 'NotStarted')).toBe('Completed');
    });
  });

  it('rule 2: the dispatcher has not yet processed the pipeline → NotStarted, whatever the stages', () => {
    expect(derive(['NotStarted', 'NotStarted'], false, 'NotStarted')).toBe('NotStarted');
    expect(derive(['Running', 'WaitingForApproval', 'RetryScheduled'], false, 'NotStarted')).toBe('NotStarted');
  });

  it.each(['Pending', 'Running', 'Throttled'] as const)('rule 3: any stage %s → Running, before rules 4 and 5', (st) => {
    expect(derive([st, 'WaitingForApproval', 'RetryScheduled', 'Completed'])).toBe('Running');
  });

  it('rule 4: otherwise, any stage WaitingForApproval → Paused (before rule 5)', () => {
    expect(derive(['Completed', 'WaitingForApproval', 'RetryScheduled', 'NotStarted'])).toBe('Paused');
    expect(derive(['Completed', 'WaitingForApproval'], true, 'Running')).toBe('Paused');
  });

  it('rule 5 / resolution 19.1: a lone RetryScheduled stage, nothing Pending, Running or Throttled → Pending', () => {
    expect(derive(['Completed', 'RetryScheduled'])).toBe('Pending');
    expect(derive(['RetryScheduled', 'NotStarted'])).toBe('Pending');
  });

  it('rule 6: otherwise → Running (NotStarted stages awaiting dispatch)', () => {
    expect(derive(['Completed', 'NotStarted'])).toBe('Running');
    expect(derive(['NotStarted'], true, 'NotStarted')).toBe('Running');
  });

  it('property: the result is terminal iff the current status is terminal or every stage is terminal', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PIPELINE_STATUSES),
        fc.boolean(),
        fc.array(fc.constantFrom(...STAGE_STATUSES), { maxLength: 8 }),
        (current, dispatched, stageStatuses) => {
          const result = derivePipelineStatus({ current, dispatched, stageStatuses });
          expect(isTerminalPipeline(result)).toBe(isTerminalPipeline(current) || stageStatuses.every(isTerminalStage));
          if (isTerminalPipeline(current)) expect(result).toBe(current);
          if (result === 'Cancelled') expect(current).toBe('Cancelled');
          if (!isTerminalPipeline(result) && !dispatched) expect(result).toBe('NotStarted');
        },
      ),
    );
  });
});
