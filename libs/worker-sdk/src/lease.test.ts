// The lease keeper on a fake clock: when a lease counts as lost, and how often it is renewed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, TransportError } from './errors.js';
import type { LeaseLostError } from './errors.js';
import { LEASE_LAPSED, LeaseKeeper } from './lease.js';
import { silentLogger } from './logger.js';
import type { StageLeaseResponse } from './protocol.js';

const LEASE_MS = 60_000;
const INTERVAL_MS = 20_000;
const granted: StageLeaseResponse = {
  acquired: true,
  attempt: 1,
  leaseExpiresAt: '2030-01-01T00:00:00.000Z',
  reason: null,
};
const unavailable = () =>
  new ApiError('POST', '/stages/1/lease/renew', 503, undefined, undefined, undefined);
const unreachable = () =>
  new TransportError('POST', '/stages/1/lease/renew', false, new Error('ECONNRESET'));

/** A keeper whose renewals `answer` decides; records when each was sent and the loss. */
function keeper(
  answer: (n: number) => Promise<StageLeaseResponse>,
  grantSentAt = performance.now(),
) {
  const sent: number[] = [];
  const lost: LeaseLostError[] = [];
  const k = new LeaseKeeper({
    intervalMs: INTERVAL_MS,
    leaseMs: LEASE_MS,
    grantSentAt,
    renew: () => {
      sent.push(performance.now());
      return answer(sent.length);
    },
    onLost: (error) => lost.push(error),
    logger: silentLogger,
    fields: {},
  });
  k.start();
  return { k, sent, lost };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('a lease the gateway refuses to renew', () => {
  it.each([
    [
      'acquired=false',
      () =>
        Promise.resolve({
          ...granted,
          acquired: false,
          attempt: null,
          leaseExpiresAt: null,
          reason: 'pipeline_cancelled',
        }),
      'pipeline_cancelled',
    ],
    [
      '404',
      () => Promise.reject(new ApiError('POST', '/x', 404, 'not_found', undefined, undefined)),
      'not_found',
    ],
    [
      '409',
      () =>
        Promise.reject(new ApiError('POST', '/x', 409, 'stale_execution', undefined, undefined)),
      'stale_execution',
    ],
  ] as const)(
    '%s is lost at once, with code LEASE_LOST, and no renewal follows',
    async (_, answer, reason) => {
      const { k, sent, lost } = keeper(answer);
      await vi.advanceTimersByTimeAsync(INTERVAL_MS);
      expect(sent).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatchObject({ code: 'LEASE_LOST', reason });
      expect(k.signal.reason).toBe(lost[0]);
      expect(k.lost).toBe(reason);
      await vi.advanceTimersByTimeAsync(LEASE_MS * 2);
      expect(sent).toHaveLength(1);
    },
  );
});

describe('renewals that do not get through', () => {
  it('are retried every 2–5 s and lose the lease when it runs out locally, not before', async () => {
    const start = performance.now();
    const { k, sent, lost } = keeper((n) =>
      Promise.reject(n % 2 === 0 ? unavailable() : unreachable()),
    );
    await vi.advanceTimersByTimeAsync(LEASE_MS - 1);
    expect(lost).toHaveLength(0);
    expect(k.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]?.reason).toBe(LEASE_LAPSED);
    expect(performance.now() - start).toBe(LEASE_MS);
    // The first at the regular period, then one every 2–5 s until the end.
    expect(sent[0]! - start).toBe(INTERVAL_MS);
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(7);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(2_000);
      expect(gap).toBeLessThanOrEqual(5_000);
    }
    const count = sent.length;
    await vi.advanceTimersByTimeAsync(LEASE_MS);
    expect(sent).toHaveLength(count);
  });

  it('count the lease from when the granting request was sent (a long-polled pull), renewing within half of what is left', async () => {
    const sentAt = performance.now();
    await vi.advanceTimersByTimeAsync(20_000); // the pull waited 20 s for its message
    const { sent, lost } = keeper(() => Promise.reject(unavailable()), sentAt);
    expect(sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(LEASE_MS - 20_000 - 1);
    expect(lost).toHaveLength(0);
    expect(sent[0]! - sentAt).toBeLessThanOrEqual(40_000); // 20 s after the start, 20 s before the end
    await vi.advanceTimersByTimeAsync(1);
    expect(lost[0]?.reason).toBe(LEASE_LAPSED);
    expect(performance.now() - sentAt).toBe(LEASE_MS);
  });

  it('a renewal granted late extends the lease from when it was sent, not answered', async () => {
    const start = performance.now();
    // The first renewal is answered 15 s after it was sent; later ones fail.
    const { lost } = keeper((n) =>
      n === 1
        ? new Promise((resolve) => setTimeout(() => resolve(granted), 15_000))
        : Promise.reject(unreachable()),
    );
    await vi.advanceTimersByTimeAsync(INTERVAL_MS + LEASE_MS - 1);
    expect(lost).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(lost[0]?.reason).toBe(LEASE_LAPSED);
    expect(performance.now() - start).toBe(INTERVAL_MS + LEASE_MS);
  });
});

describe('renewals that fail, then get through', () => {
  it('keep the lease: no loss, and the regular period again after the success', async () => {
    const { k, sent, lost } = keeper((n) =>
      n <= 3 ? Promise.reject(n === 2 ? unreachable() : unavailable()) : Promise.resolve(granted),
    );
    await vi.advanceTimersByTimeAsync(LEASE_MS * 5);
    expect(lost).toHaveLength(0);
    expect(k.lost).toBeUndefined();
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    expect(gaps.slice(0, 3).every((gap) => gap >= 2_000 && gap <= 5_000)).toBe(true);
    expect(gaps.slice(3).every((gap) => gap === INTERVAL_MS)).toBe(true);
    k.stop();
  });
});
