import { describe, expect, it } from 'vitest';
import { forgetSensitive } from '@po/telemetry';
import { classifyFailure, describeFailure } from './failures.js';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('what a failed result application costs (decision 0119)', () => {
  it('an outage (PostgreSQL or Redis away, a failover) spends no attempt', () => {
    for (const err of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      pgError('57P01', 'terminating connection due to administrator command'),
      pgError('25006', 'cannot execute UPDATE in a read-only transaction'),
      pgError('53300', 'sorry, too many clients already'),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('commit failed', { cause: pgError('08006') }),
    ]) {
      expect(classifyFailure(err), err.message).toBe('outage');
    }
  });

  it('contention that outlasted the engine’s own retries spends one, as contention', () => {
    for (const code of ['40P01', '40001', '55P03', '57014', '25P03']) expect(classifyFailure(pgError(code))).toBe('contention');
  });

  it('anything else spends one', () => {
    expect(classifyFailure(pgError('P0001', 'refused'))).toBe('error');
    expect(classifyFailure(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe('error');
    expect(classifyFailure('thrown string')).toBe('error');
  });

  it('the dead letter’s text names the error and censors the result’s sensitive values', () => {
    forgetSensitive();
    const message = {
      applicationId: 1,
      stageId: 2,
      workerId: 'w',
      receivedAt: new Date().toISOString(),
      result: { stageId: 2, executionId: 'e', attempt: 1, contextItems: [{ key: 'k', value: 'top-secret-value', isSensitive: true }] },
    };
    const text = describeFailure(pgError('P0001', 'value "top-secret-value" refused'), message);
    expect(text).toBe('[P0001] value "[REDACTED]" refused');
    expect(describeFailure(new Error('x'.repeat(2000)), message)).toHaveLength(500);
  });
});
