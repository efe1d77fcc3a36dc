// Deliveries held by one gateway process (api-spec behaviour rules 1-2; addendum §15), over a fake
// fetcher and a fake clock.
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import type { FetchedMessage, StageNextFetcher } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { Deliveries } from './deliveries.js';

function message(id: string): FetchedMessage {
  return {
    job: { id, queueName: 'q', data: { executionId: id } },
    lockToken: `lock-${id}`,
  } as unknown as FetchedMessage;
}

class FakeFetcher {
  readonly queue: FetchedMessage[] = [];
  readonly completed: string[] = [];
  readonly requeued: string[] = [];
  fetches = 0;
  failRequeue = false;
  onFetch: () => void = () => undefined;
  async fetch(): Promise<FetchedMessage | null> {
    this.fetches += 1;
    this.onFetch();
    return this.queue.shift() ?? null;
  }
  async complete(m: FetchedMessage): Promise<void> {
    this.completed.push(String(m.job.id));
  }
  async requeue(m: FetchedMessage): Promise<void> {
    if (this.failRequeue) throw new Error('Missing lock');
    this.requeued.push(String(m.job.id));
    this.queue.push(m);
  }
}

function setup(
  options: Partial<{
    maxInflight: number;
    visibilityTimeoutMs: number;
    pollIntervalMs: number;
  }> = {},
) {
  const fetcher = new FakeFetcher();
  const clock = { now: 1_000_000 };
  const lines: string[] = [];
  const logger = createLogger({
    service: 'test',
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  });
  const deliveries = new Deliveries(
    fetcher as unknown as StageNextFetcher,
    { maxInflight: 2, visibilityTimeoutMs: 60_000, pollIntervalMs: 250, ...options },
    logger,
    () => clock.now,
  );
  return { fetcher, clock, deliveries, lines };
}
const never = new AbortController().signal;

describe('Deliveries', () => {
  it('a pull hands out a new token per delivery and holds it until ack', async () => {
    const { fetcher, deliveries } = setup();
    fetcher.queue.push(message('a'), message('b'));
    const a = await deliveries.pull('q', 0, never);
    const b = await deliveries.pull('q', 0, never);
    expect(a).toMatchObject({ queue: 'q', messageId: 'a', payload: { executionId: 'a' } });
    expect(b?.messageId).toBe('b');
    expect(a!.token).not.toBe(b!.token);
    expect(deliveries.inflight).toBe(2);
    expect(await deliveries.ack(a!.token, false)).toBe(true);
    expect(fetcher.completed).toEqual(['a']);
    expect(await deliveries.ack(a!.token, false)).toBe(false);
    expect(deliveries.inflight).toBe(1);
  });

  it('waitSeconds 0 on an empty queue fetches once and answers null', async () => {
    const { fetcher, deliveries } = setup();
    expect(await deliveries.pull('q', 0, never)).toBeNull();
    expect(fetcher.fetches).toBe(1);
  });

  it('ack with requeue=true gives the same message back', async () => {
    const { fetcher, deliveries } = setup();
    fetcher.queue.push(message('a'));
    const first = await deliveries.pull('q', 0, never);
    expect(await deliveries.ack(first!.token, true)).toBe(true);
    expect(fetcher.requeued).toEqual(['a']);
    expect(fetcher.completed).toEqual([]);
    const second = await deliveries.pull('q', 0, never);
    expect(second?.messageId).toBe('a');
    expect(second!.token).not.toBe(first!.token);
  });

  it('full() once the process holds maxInflight deliveries', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 2 });
    fetcher.queue.push(message('a'), message('b'));
    expect(deliveries.full()).toBe(false);
    const a = await deliveries.pull('q', 0, never);
    expect(deliveries.full()).toBe(false);
    await deliveries.pull('q', 0, never);
    expect(deliveries.full()).toBe(true);
    await deliveries.ack(a!.token, false);
    expect(deliveries.full()).toBe(false);
  });

  it('the sweep requeues only deliveries past the visibility timeout; their tokens are then unknown', async () => {
    const { fetcher, clock, deliveries } = setup({ visibilityTimeoutMs: 2000 });
    fetcher.queue.push(message('old'));
    const old = await deliveries.pull('q', 0, never);
    clock.now += 1500;
    fetcher.queue.push(message('young'));
    const young = await deliveries.pull('q', 0, never);
    clock.now += 500;
    expect(await deliveries.sweepExpired()).toBe(1);
    expect(fetcher.requeued).toEqual(['old']);
    expect(await deliveries.ack(old!.token, false)).toBe(false);
    expect(await deliveries.ack(young!.token, false)).toBe(true);
  });

  it('a failed requeue in the sweep is logged and the delivery is dropped (the stalled check takes over)', async () => {
    const { fetcher, clock, deliveries, lines } = setup({ visibilityTimeoutMs: 1000 });
    fetcher.queue.push(message('a'));
    const a = await deliveries.pull('q', 0, never);
    fetcher.failRequeue = true;
    clock.now += 1000;
    expect(await deliveries.sweepExpired()).toBe(0);
    expect(deliveries.inflight).toBe(0);
    expect(lines.join('')).toContain('visibility-timeout requeue failed');
    expect(await deliveries.ack(a!.token, false)).toBe(false);
  });

  it('an ack after the visibility timeout, before a sweep, is refused (not held) and the message goes back instead of completing', async () => {
    const { fetcher, clock, deliveries } = setup({ visibilityTimeoutMs: 2000 });
    fetcher.queue.push(message('a'));
    const a = await deliveries.pull('q', 0, never);
    clock.now += 2000;
    expect(await deliveries.ack(a!.token, false)).toBe(false);
    expect(fetcher.completed).toEqual([]);
    expect(fetcher.requeued).toEqual(['a']);
    expect(deliveries.inflight).toBe(0);
  });

  it('the visibility timeout counts from before the fetch (when the broker lock starts)', async () => {
    const { fetcher, clock, deliveries } = setup({ visibilityTimeoutMs: 2000 });
    fetcher.queue.push(message('a'));
    fetcher.onFetch = () => {
      clock.now += 300;
    };
    const a = await deliveries.pull('q', 0, never);
    clock.now += 1700;
    expect(await deliveries.sweepExpired()).toBe(1);
    expect(await deliveries.ack(a!.token, false)).toBe(false);
  });

  it('a waiting pull wakes as soon as its queue is announced, before the next poll', async () => {
    const { fetcher, deliveries } = setup({ pollIntervalMs: 250 });
    const started = Date.now();
    const pending = deliveries.pull('q', 5, never);
    await new Promise((r) => setTimeout(r, 20));
    fetcher.queue.push(message('a'));
    deliveries.wake('q');
    const got = await pending;
    expect(got?.messageId).toBe('a');
    expect(Date.now() - started).toBeLessThan(200);
  });

  it('a waiting pull polls about every pollIntervalMs and answers null at the deadline', async () => {
    const fetcher = new FakeFetcher();
    const deliveries = new Deliveries(
      fetcher as unknown as StageNextFetcher,
      { maxInflight: 2, visibilityTimeoutMs: 60_000, pollIntervalMs: 20 },
      createLogger({ service: 't', level: 'silent' }),
      () => Date.now(),
    );
    const got = await deliveries.pull('q', 0.2, never);
    expect(got).toBeNull();
    // 200 ms at one fetch per 20 ms: about 10 fetches, never far fewer.
    expect(fetcher.fetches).toBeGreaterThanOrEqual(6);
    expect(fetcher.fetches).toBeLessThanOrEqual(12);
  });

  it('an aborted pull stops waiting; a message fetched after the abort goes straight back', async () => {
    const { fetcher, deliveries } = setup();
    const gone = new AbortController();
    const pending = deliveries.pull('q', 5, gone.signal);
    await new Promise((r) => setTimeout(r, 10));
    gone.abort();
    expect(await pending).toBeNull();

    const late = new AbortController();
    fetcher.queue.push(message('a'));
    fetcher.onFetch = () => late.abort();
    expect(await deliveries.pull('q', 5, late.signal)).toBeNull();
    // The pull answers at the abort; the fetch in flight then hands its message back.
    await vi.waitFor(() => expect(fetcher.requeued).toEqual(['a']));
    expect(deliveries.inflight).toBe(0);
  });

  it('releaseAll gives every held delivery back; stopWaiting answers waiting pulls at once', async () => {
    const { fetcher, deliveries } = setup();
    fetcher.queue.push(message('a'), message('b'));
    await deliveries.pull('q', 0, never);
    await deliveries.pull('q', 0, never);
    const waiting = deliveries.pull('other', 10, never);
    await new Promise((r) => setTimeout(r, 10));
    deliveries.stopWaiting();
    expect(await waiting).toBeNull();
    await deliveries.releaseAll();
    expect(fetcher.requeued.sort()).toEqual(['a', 'b']);
    expect(deliveries.inflight).toBe(0);
  });

  it('one message wakes one fetch, not every waiting pull; the pulls are served first come first served', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 100 });
    const pulls = Array.from({ length: 8 }, () => deliveries.pull('q', 5, never));
    await new Promise((r) => setTimeout(r, 20));
    const before = fetcher.fetches;
    fetcher.queue.push(message('a'));
    deliveries.wake('q');
    expect((await pulls[0])?.messageId).toBe('a');
    // The hit, then one miss that finds the queue empty.
    expect(fetcher.fetches - before).toBeLessThanOrEqual(2);
    deliveries.stopWaiting();
    expect(await Promise.all(pulls.slice(1))).toEqual(Array(7).fill(null));
  });

  it('a wake-up that arrives during a fetch is not lost: the loop fetches again', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 100, pollIntervalMs: 10_000 });
    let first = true;
    fetcher.onFetch = () => {
      if (!first) return;
      first = false;
      // The message lands while this (empty) fetch is on its way.
      queueMicrotask(() => {
        fetcher.queue.push(message('late'));
        deliveries.wake('q');
      });
    };
    const started = Date.now();
    const got = await deliveries.pull('q', 5, never);
    expect(got?.messageId).toBe('late');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('with a backlog, one round fetches for every waiting pull at once (pipelined)', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 100 });
    for (let i = 0; i < 6; i += 1) fetcher.queue.push(message(`m${i}`));
    let inFlight = 0;
    let most = 0;
    const fetch = fetcher.fetch.bind(fetcher);
    fetcher.fetch = async () => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight -= 1;
      return fetch();
    };
    const got = await Promise.all(Array.from({ length: 6 }, () => deliveries.pull('q', 5, never)));
    expect(got.map((d) => d?.messageId).sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    expect(most).toBeGreaterThan(1);
  });
});
