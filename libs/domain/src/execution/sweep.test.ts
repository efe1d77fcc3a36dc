import { describe, expect, it } from 'vitest';
import { expiryFailure, expiryLogMessage, expiryOf, timeoutAtFor } from './sweep.js';

const NOW = new Date('2025-03-01T12:00:00.000Z');
const plus = (ms: number) => new Date(NOW.getTime() + ms);

describe('timeouts and lease expiry (addendum §11)', () => {
  it('neither passed → null', () => {
    expect(expiryOf({ leaseExpiresAt: plus(1), timeoutAt: plus(1), endedAt: null }, NOW)).toBeNull();
    expect(expiryOf({ leaseExpiresAt: null, timeoutAt: null, endedAt: null }, NOW)).toBeNull();
  });

  it('leaseExpiresAt passed → LEASE_EXPIRED (from the expiry instant on)', () => {
    expect(expiryOf({ leaseExpiresAt: plus(-1), timeoutAt: null, endedAt: null }, NOW)).toBe('LEASE_EXPIRED');
    expect(expiryOf({ leaseExpiresAt: NOW, timeoutAt: plus(5), endedAt: null }, NOW)).toBe('LEASE_EXPIRED');
  });

  it('timeoutAt passed → TIMEOUT, even while the lease is unexpired', () => {
    expect(expiryOf({ leaseExpiresAt: plus(30_000), timeoutAt: NOW, endedAt: null }, NOW)).toBe('TIMEOUT');
  });

  it('TIMEOUT takes precedence over LEASE_EXPIRED when both passed', () => {
    expect(expiryOf({ leaseExpiresAt: plus(-2), timeoutAt: plus(-1), endedAt: null }, NOW)).toBe('TIMEOUT');
  });

  it('an ended execution never expires again', () => {
    expect(expiryOf({ leaseExpiresAt: plus(-2), timeoutAt: plus(-1), endedAt: plus(-1) }, NOW)).toBeNull();
  });

  it('the handler timeout runs from the lease grant; no timeOut → no timeout', () => {
    expect(timeoutAtFor(NOW, 90)).toEqual(plus(90_000));
    expect(timeoutAtFor(NOW, null)).toBeNull();
  });

  it('both codes are failures marked retryable', () => {
    expect(expiryFailure('TIMEOUT')).toEqual({ errorCode: 'TIMEOUT', retryable: true });
    expect(expiryFailure('LEASE_EXPIRED')).toEqual({ errorCode: 'LEASE_EXPIRED', retryable: true });
  });

  it('writes the Warning stage log "Execution {executionId} attempt {n} failed: {code}"', () => {
    expect(expiryLogMessage('e-1', 3, 'TIMEOUT')).toBe('Execution e-1 attempt 3 failed: TIMEOUT');
    expect(expiryLogMessage('e-1', 1, 'LEASE_EXPIRED')).toBe('Execution e-1 attempt 1 failed: LEASE_EXPIRED');
    expect(expiryLogMessage('e-1', null, 'LEASE_EXPIRED')).toBe('Execution e-1 failed: LEASE_EXPIRED');
  });
});
