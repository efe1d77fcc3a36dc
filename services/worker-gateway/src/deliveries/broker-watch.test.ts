import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RedisConnection } from '@po/queues';
import { watchBroker } from './broker-watch.js';

/** A connection whose PINGs the test answers (or not) one by one. */
function connection() {
  const pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const conn = {
    status: 'ready',
    ping: () => new Promise<string>((resolve, reject) => pending.push({ resolve: () => resolve('PONG'), reject })),
  };
  return { conn, pending, asConnection: conn as unknown as RedisConnection };
}

describe('watchBroker', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('is ready while PINGs are answered, not once one goes unanswered past silentAfterMs, and ready again at its answer', async () => {
    const { pending, asConnection } = connection();
    const watch = watchBroker(asConnection, { silentAfterMs: 2000, intervalMs: 1000 });
    expect(watch.ready()).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(pending).toHaveLength(1);
    pending.shift()!.resolve();
    await vi.advanceTimersByTimeAsync(1000);
    expect(watch.ready()).toBe(true);
    // No answer: another PING is not sent meanwhile, and after 2 s Redis counts as away.
    await vi.advanceTimersByTimeAsync(2000);
    expect(pending).toHaveLength(1);
    expect(watch.ready()).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(watch.ready()).toBe(false);
    pending.shift()!.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.ready()).toBe(true);
    watch.stop();
  });

  it('is not ready after a failed PING until one succeeds, nor while the connection is not ready', async () => {
    const { conn, pending, asConnection } = connection();
    const watch = watchBroker(asConnection, { silentAfterMs: 2000, intervalMs: 1000 });
    await vi.advanceTimersByTimeAsync(1000);
    pending.shift()!.reject(new Error('Command timed out'));
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.ready()).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    pending.shift()!.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.ready()).toBe(true);
    conn.status = 'reconnecting';
    expect(watch.ready()).toBe(false);
    watch.stop();
  });
});
