import { describe, expect, it } from 'vitest';
import { expressionOf, healthSummary, nextRunOf } from './schedule-text';

describe('expressionOf', () => {
  it('shows each kind in its own terms', () => {
    expect(
      expressionOf({
        kind: 'Cron',
        cronExpression: '*/5 * * * *',
        intervalSeconds: null,
        runAt: null,
      }),
    ).toBe('*/5 * * * *');
    expect(
      expressionOf({ kind: 'Interval', cronExpression: null, intervalSeconds: 300, runAt: null }),
    ).toBe('every 5 min 00 s');
    expect(
      expressionOf({
        kind: 'Once',
        cronExpression: null,
        intervalSeconds: null,
        runAt: '2025-03-01T12:00:00.000Z',
      }),
    ).toBe('once at 2025-03-01T12:00:00.000Z');
  });
});

describe('nextRunOf', () => {
  it('prefers the jittered next runs, and falls back to nextRunAt on older servers', () => {
    expect(nextRunOf({ nextRunAt: 'b', nextRuns: ['a', 'c'] })).toBe('a');
    expect(nextRunOf({ nextRunAt: 'b' })).toBe('b');
    expect(nextRunOf({ nextRunAt: null, nextRuns: [] })).toBeNull();
  });
});

describe('healthSummary', () => {
  const health = {
    windowSize: 20,
    total: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    running: 0,
    skipped: 0,
    lastFailureAt: null,
    state: 'idle' as const,
  };
  it('summarises the window with only the counts that are not zero', () => {
    expect(healthSummary(health)).toBe('no runs yet');
    expect(
      healthSummary({ ...health, total: 20, completed: 17, failed: 3, state: 'degraded' }),
    ).toBe('17 completed, 3 failed of the last 20');
  });
});
