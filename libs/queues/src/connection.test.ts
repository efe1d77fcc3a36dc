import type { QueueBase } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { reopeningQueue } from './connection.js';

/** Just what reopeningQueue touches of a BullMQ queue: its error listeners, setup promise and close. */
function fakeQueue(setup: 'ok' | 'failed') {
  const q = {
    closed: false,
    errorListeners: 0,
    on: (event: string) => {
      if (event === 'error') q.errorListeners += 1;
      return q;
    },
    waitUntilReady: () => (setup === 'ok' ? Promise.resolve() : Promise.reject(new Error('Reached the max retries per request limit'))),
    close: async () => {
      q.closed = true;
    },
  };
  return q;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('reopeningQueue', () => {
  it('keeps one queue while its setup succeeded', async () => {
    let made = 0;
    const holder = reopeningQueue(() => {
      made += 1;
      return fakeQueue('ok') as unknown as QueueBase;
    });
    const first = holder.get();
    await settle();
    expect(holder.get()).toBe(first);
    expect(made).toBe(1);
    // Someone listens for its errors, so BullMQ does not print them as raw stacks.
    expect((first as unknown as ReturnType<typeof fakeQueue>).errorListeners).toBe(1);
  });

  it('drops a queue whose setup failed (Redis away) and makes a new one on the next use', async () => {
    const made: ReturnType<typeof fakeQueue>[] = [];
    const holder = reopeningQueue(() => {
      const q = fakeQueue(made.length === 0 ? 'failed' : 'ok');
      made.push(q);
      return q as unknown as QueueBase;
    });
    const broken = holder.get();
    await settle();
    expect(made[0]!.closed).toBe(true);
    const fresh = holder.get();
    expect(fresh).not.toBe(broken);
    await settle();
    expect(holder.get()).toBe(fresh);
    expect(made).toHaveLength(2);
  });
});
