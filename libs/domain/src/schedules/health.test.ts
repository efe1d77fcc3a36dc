import { describe, expect, it } from 'vitest';
import type { RunForHealth } from './health.js';
import { scheduleHealth } from './health.js';

let clock = Date.UTC(2026, 0, 1);
/** Runs are written newest first; each helper call is one minute older than the previous one. */
function run(status: RunForHealth['status'], pipelineStatus: string | null = null): RunForHealth {
  clock -= 60_000;
  return { status, pipelineStatus, createdAt: new Date(clock) };
}
const done = (): RunForHealth => run('Created', 'Completed');
const failed = (): RunForHealth => run('Created', 'Failed');

describe('scheduleHealth (§14.9)', () => {
  it('idle without runs', () => {
    expect(scheduleHealth([])).toEqual({
      windowSize: 20,
      total: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      running: 0,
      skipped: 0,
      lastFailureAt: null,
      state: 'idle',
    });
  });

  it('counts every kind of run; total is their sum', () => {
    const runs = [
      run('Created', 'Running'),
      run('Created', 'Pending'),
      run('Queued'),
      run('Skipped'),
      run('Failed'),
      run('Created', 'Failed'),
      run('Created', 'Cancelled'),
      run('Created', 'Completed'),
      run('Created', 'NotStarted'),
      run('Created', 'Paused'),
    ];
    const h = scheduleHealth(runs);
    expect(h).toMatchObject({
      total: 10,
      completed: 1,
      failed: 2,
      cancelled: 1,
      running: 5,
      skipped: 1,
    });
    expect(h.lastFailureAt).toEqual(runs[4]?.createdAt); // the newest failed run: creation failed
    expect(h.completed + h.failed + h.cancelled + h.running + h.skipped).toBe(h.total);
  });

  it('only the newest 20 runs count', () => {
    const runs = [...Array.from({ length: 20 }, done), ...Array.from({ length: 5 }, failed)];
    expect(scheduleHealth(runs)).toMatchObject({
      windowSize: 20,
      total: 20,
      completed: 20,
      failed: 0,
      lastFailureAt: null,
      state: 'healthy',
    });
  });

  it('failing: the newest finished run failed and failed ≥ completed', () => {
    expect(scheduleHealth([run('Queued'), failed(), done()]).state).toBe('failing');
    expect(scheduleHealth([run('Skipped'), run('Failed')]).state).toBe('failing');
  });

  it('degraded: failures, but the newest finished run did not fail, or completions outnumber failures', () => {
    expect(scheduleHealth([done(), failed(), failed()]).state).toBe('degraded');
    expect(scheduleHealth([failed(), done(), done()]).state).toBe('degraded');
    expect(scheduleHealth([run('Created', 'Cancelled'), failed()]).state).toBe('degraded');
  });

  it('healthy: no failures, whatever else', () => {
    expect(scheduleHealth([done()]).state).toBe('healthy');
    expect(scheduleHealth([run('Skipped'), run('Queued'), run('Created', 'Cancelled')]).state).toBe(
      'healthy',
    );
  });

  it('state order: failing is checked before degraded', () => {
    const h = scheduleHealth([failed(), failed(), done()]);
    expect(h.failed).toBeGreaterThan(0);
    expect(h.state).toBe('failing');
  });
});
