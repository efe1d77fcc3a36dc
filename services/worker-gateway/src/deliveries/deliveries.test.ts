// Deliveries held by one gateway process (api-spec behaviour rules 1-2; addendum §15), over a fake
// fetcher and a fake clock.
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import type { FetchedMessage, StageNextFetcher } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { Deliveries, TooManyInflight, type DeliveriesOptions } from './deliveries.js';
import { ackJob } from './operations.js';

const LIMITS: DeliveriesOptions = {
  maxInflight: 2,
  maxInflightPerApp: 100,
  maxWaitingPerApp: 100,
  maxInflightBytes: 64 * 1024 * 1024,
  visibilityTimeoutMs: 60_000,
  pollIntervalMs: 250,
  pollMaxMs: 2000,
};

const APP = 7;

/** A message as the fetcher gives it; `fetchedAt` is set when the fake fetcher hands it out. */
function message(id: string, bytes = 1000): FetchedMessage {
  return {
    id,
    data: { executionId: id },
    lockToken: `lock-${id}`,
    queue: 'q',
    bytes,
    fetchedAt: 0,
  } as unknown as FetchedMessage;
}

class FakeFetcher {
  readonly queue: FetchedMessage[] = [];
  readonly completed: string[] = [];
  readonly requeued: string[] = [];
  fetches = 0;
  /** Places of the queue (a handler's maxConcurrent), and those taken. */
  limit: number | null = null;
  readonly places = new Set<string>();
  failRequeue = false;
  failComplete = false;
  completeError: Error | undefined;
  onFetch: () => void = () => undefined;
  constructor(private readonly now: () => number) {}
  acquire(): boolean {
    return true;
  }
  release(): void {}
  limited(): boolean {
    return this.limit !== null;
  }
  async takePlaces(_queue: string, ids: readonly string[]): Promise<number> {
    const n = this.limit === null ? ids.length : Math.max(0, Math.min(ids.length, this.limit - this.places.size));
    for (const id of ids.slice(0, n)) this.places.add(id);
    return n;
  }
  releasePlaces(_queue: string, ids: readonly string[]): void {
    for (const id of ids) this.places.delete(id);
  }
  renewPlace(): number {
    return 0;
  }
  async refreshLimit(): Promise<void> {}
  async limitKnown(): Promise<void> {}
  async fetch(): Promise<FetchedMessage | null> {
    // The broker lock starts with the call, before whatever time it takes.
    const fetchedAt = this.now();
    this.fetches += 1;
    this.onFetch();
    const m = this.queue.shift();
    // One that waited in the fetcher (a message of a batch) keeps the time its job was fetched.
    return m ? { ...m, fetchedAt: m.fetchedAt || fetchedAt } : null;
  }
  async complete(m: FetchedMessage): Promise<void> {
    if (this.failComplete) throw new Error('Command timed out');
    if (this.completeError) throw this.completeError;
    this.completed.push(m.id);
  }
  async completeAndFetch(m: FetchedMessage): Promise<FetchedMessage | null> {
    await this.complete(m);
    this.completedWithFetch += 1;
    return this.fetch();
  }
  completedWithFetch = 0;
  async requeue(m: FetchedMessage): Promise<void> {
    if (this.failRequeue) throw new Error('Missing lock');
    this.requeued.push(m.id);
    this.queue.push(m);
  }
  async sweepBuffered(): Promise<number> {
    return 0;
  }
}

function setup(
  options: Partial<DeliveriesOptions> = {},
) {
  const clock = { now: 1_000_000 };
  const fetcher = new FakeFetcher(() => clock.now);
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
    { ...LIMITS, ...options },
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
    const a = await deliveries.pull('q', APP, 0, never);
    const b = await deliveries.pull('q', APP, 0, never);
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
    expect(await deliveries.pull('q', APP, 0, never)).toBeNull();
    expect(fetcher.fetches).toBe(1);
  });

  it('ack with requeue=true gives the same message back', async () => {
    const { fetcher, deliveries } = setup();
    fetcher.queue.push(message('a'));
    const first = await deliveries.pull('q', APP, 0, never);
    expect(await deliveries.ack(first!.token, true)).toBe(true);
    expect(fetcher.requeued).toEqual(['a']);
    expect(fetcher.completed).toEqual([]);
    const second = await deliveries.pull('q', APP, 0, never);
    expect(second?.messageId).toBe('a');
    expect(second!.token).not.toBe(first!.token);
  });

  it('an ack the broker does not confirm rejects and leaves the delivery held, so the retried ack completes it', async () => {
    const { fetcher, deliveries } = setup();
    fetcher.queue.push(message('a'));
    const a = await deliveries.pull('q', APP, 0, never);
    fetcher.failComplete = true;
    await expect(deliveries.ack(a!.token, false)).rejects.toThrow(/timed out/);
    // POST /jobs/ack answers that as 503 broker_unavailable (with Retry-After), never 500.
    await expect(ackJob(deliveries, { token: a!.token })).rejects.toMatchObject({ code: 'broker_unavailable' });
    expect(deliveries.inflight).toBe(1);
    expect(deliveries.heldMessage(a!.token)).toBeDefined();
    fetcher.failComplete = false;
    expect(await deliveries.ack(a!.token, false)).toBe(true);
    expect(fetcher.completed).toEqual(['a']);
    expect(deliveries.inflight).toBe(0);
  });

  it('an ack whose job is not ours any more (lock lapsed, taken back by the stalled check) answers not held, not 503', async () => {
    const { fetcher, deliveries } = setup();
    fetcher.queue.push(message('a'));
    const a = await deliveries.pull('q', APP, 0, never);
    fetcher.completeError = Object.assign(new Error('Missing lock for job a. moveToFinished'), { code: -2 });
    expect(await deliveries.ack(a!.token, false)).toBe(false);
    expect(deliveries.inflight).toBe(0);
  });

  it('a pull is refused (429 too_many_inflight) before waiting once the process holds maxInflight deliveries', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 2 });
    fetcher.queue.push(message('a'), message('b'), message('c'));
    const a = await deliveries.pull('q', APP, 0, never);
    await deliveries.pull('q', APP, 0, never);
    const before = fetcher.fetches;
    await expect(deliveries.pull('q', APP + 1, 5, never)).rejects.toMatchObject({ code: 'too_many_inflight', reason: 'process_inflight' });
    expect(fetcher.fetches).toBe(before);
    await deliveries.ack(a!.token, false);
    expect((await deliveries.pull('q', APP, 0, never))?.messageId).toBe('c');
  });

  it('the sweep requeues only deliveries past the visibility timeout; their tokens are then unknown', async () => {
    const { fetcher, clock, deliveries } = setup({ visibilityTimeoutMs: 2000 });
    fetcher.queue.push(message('old'));
    const old = await deliveries.pull('q', APP, 0, never);
    clock.now += 1500;
    fetcher.queue.push(message('young'));
    const young = await deliveries.pull('q', APP, 0, never);
    clock.now += 500;
    expect(await deliveries.sweepExpired()).toBe(1);
    expect(fetcher.requeued).toEqual(['old']);
    expect(await deliveries.ack(old!.token, false)).toBe(false);
    expect(await deliveries.ack(young!.token, false)).toBe(true);
  });

  it('a failed requeue in the sweep is logged and the delivery is dropped (the stalled check takes over)', async () => {
    const { fetcher, clock, deliveries, lines } = setup({ visibilityTimeoutMs: 1000 });
    fetcher.queue.push(message('a'));
    const a = await deliveries.pull('q', APP, 0, never);
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
    const a = await deliveries.pull('q', APP, 0, never);
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
    const a = await deliveries.pull('q', APP, 0, never);
    clock.now += 1700;
    expect(await deliveries.sweepExpired()).toBe(1);
    expect(await deliveries.ack(a!.token, false)).toBe(false);
  });

  it('a message that waited in the fetcher (the rest of a batch) expires a visibility timeout after its job was fetched, not after its pull', async () => {
    const { fetcher, clock, deliveries } = setup({ visibilityTimeoutMs: 2000 });
    fetcher.queue.push({ ...message('buffered'), fetchedAt: clock.now });
    clock.now += 800;
    const d = await deliveries.pull('q', APP, 0, never);
    clock.now += 1200;
    expect(deliveries.heldMessage(d!.token)).toBeUndefined();
    expect(await deliveries.sweepExpired()).toBe(1);
    expect(fetcher.requeued).toEqual(['buffered']);
  });

  it('a waiting pull wakes as soon as its queue is announced, before the next poll', async () => {
    const { fetcher, deliveries } = setup({ pollIntervalMs: 250 });
    const started = Date.now();
    const pending = deliveries.pull('q', APP, 5, never);
    await new Promise((r) => setTimeout(r, 20));
    fetcher.queue.push(message('a'));
    deliveries.wake('q');
    const got = await pending;
    expect(got?.messageId).toBe('a');
    expect(Date.now() - started).toBeLessThan(200);
  });

  it('while its queue stays empty, a waiting pull polls less and less often (wake-ups bring messages) and answers null at the deadline', async () => {
    const { fetcher, deliveries } = setup({ pollIntervalMs: 20, pollMaxMs: 160 });
    expect(await deliveries.pull('q', APP, 1.2, never)).toBeNull();
    // Every 20 ms would be about 60 fetches; doubling from 20 ms up to 160 ms is about 10.
    expect(fetcher.fetches).toBeGreaterThanOrEqual(5);
    expect(fetcher.fetches).toBeLessThanOrEqual(14);
  });

  it("a queue held to its handler's maxConcurrent: a pull takes a place before it fetches, waits while none is free, and takes the one an ack gives back at once", async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 10, pollIntervalMs: 250, pollMaxMs: 10_000 });
    fetcher.limit = 1;
    fetcher.queue.push(message('a'), message('b'));
    const first = await deliveries.pull('q', APP, 5, never);
    expect(first?.messageId).toBe('a');
    expect(first?.backlog).toBeUndefined();
    expect(fetcher.places.size).toBe(1);
    let second: string | undefined;
    let secondBacklog: boolean | undefined;
    const pending = deliveries.pull('q', APP, 5, never).then((d) => {
      second = d?.messageId;
      secondBacklog = d?.backlog;
    });
    // No place: the message stays in the queue (not fetched and handed back), the pull backs off.
    await new Promise((r) => setTimeout(r, 800));
    expect(second).toBeUndefined();
    expect(fetcher.queue.map((m) => m.id)).toEqual(['b']);
    const acked = Date.now();
    await deliveries.ack(first!.token, false);
    await pending;
    expect(second).toBe('b');
    expect(Date.now() - acked).toBeLessThan(200);
    expect(fetcher.places.size).toBe(1);
    // The ack took the next message in the same call and handed its place on with it.
    expect(fetcher.completedWithFetch).toBe(1);
    // It waited for a place, not for a message: the worker is told the queue has a backlog.
    expect(secondBacklog).toBe(true);
  });

  it('a pull that waited for a place says backlog when a place given back lets it fetch; one that waited for a message does not', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 10, pollIntervalMs: 250, pollMaxMs: 10_000 });
    fetcher.limit = 1;
    fetcher.queue.push(message('a'), message('b'));
    const first = await deliveries.pull('q', APP, 5, never);
    const pending = deliveries.pull('q', APP, 5, never);
    await new Promise((r) => setTimeout(r, 100));
    // A requeue gives the place back without taking a message: the waiting pull fetches its own.
    await deliveries.ack(first!.token, true);
    const second = await pending;
    expect(second?.backlog).toBe(true);
    await deliveries.ack(second!.token, false);
    fetcher.limit = null;
    fetcher.queue.length = 0;
    const third = deliveries.pull('q', APP, 5, never);
    await new Promise((r) => setTimeout(r, 100));
    fetcher.queue.push(message('c'));
    deliveries.wake('q');
    expect((await third)?.backlog).toBeUndefined();
  });

  it('a place is given back by a requeue, by the visibility sweep, and when the queue had nothing for it', async () => {
    const { fetcher, deliveries, clock } = setup({ maxInflight: 10 });
    fetcher.limit = 2;
    expect(await deliveries.pull('q', APP, 0, never)).toBeNull();
    expect(fetcher.places.size).toBe(0);
    fetcher.queue.push(message('a'), message('b'));
    const a = await deliveries.pull('q', APP, 0, never);
    const b = await deliveries.pull('q', APP, 0, never);
    expect(fetcher.places.size).toBe(2);
    await deliveries.ack(a!.token, true);
    expect(fetcher.places.size).toBe(1);
    clock.now += 60_001;
    expect(await deliveries.sweepExpired()).toBe(1);
    expect(fetcher.places.size).toBe(0);
    expect(b).not.toBeNull();
  });

  it('a message that arrives without a wake-up (a lost announcement) is still found by the safety poll', async () => {
    const { fetcher, deliveries } = setup({ pollIntervalMs: 20, pollMaxMs: 80 });
    const pending = deliveries.pull('q', APP, 5, never);
    await new Promise((r) => setTimeout(r, 400));
    fetcher.queue.push(message('quiet'));
    const started = Date.now();
    expect((await pending)?.messageId).toBe('quiet');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('an aborted pull stops waiting; a message fetched after the abort goes straight back', async () => {
    const { fetcher, deliveries } = setup();
    const gone = new AbortController();
    const pending = deliveries.pull('q', APP, 5, gone.signal);
    await new Promise((r) => setTimeout(r, 10));
    gone.abort();
    expect(await pending).toBeNull();

    const late = new AbortController();
    fetcher.queue.push(message('a'));
    fetcher.onFetch = () => late.abort();
    expect(await deliveries.pull('q', APP, 5, late.signal)).toBeNull();
    // The pull answers at the abort; the fetch in flight then hands its message back.
    await vi.waitFor(() => expect(fetcher.requeued).toEqual(['a']));
    expect(deliveries.inflight).toBe(0);
  });

  it('releaseAll gives every held delivery back; stopWaiting answers waiting pulls at once', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 3 });
    fetcher.queue.push(message('a'), message('b'));
    await deliveries.pull('q', APP, 0, never);
    await deliveries.pull('q', APP, 0, never);
    const waiting = deliveries.pull('other', APP, 10, never);
    await new Promise((r) => setTimeout(r, 10));
    deliveries.stopWaiting();
    expect(await waiting).toBeNull();
    await deliveries.releaseAll();
    expect(fetcher.requeued.sort()).toEqual(['a', 'b']);
    expect(deliveries.inflight).toBe(0);
  });

  it('one message wakes one fetch, not every waiting pull; the pulls are served first come first served', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 100 });
    const pulls = Array.from({ length: 8 }, () => deliveries.pull('q', APP, 5, never));
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

  it('pulls that join a queue found empty wait with the others for its wake-up instead of fetching; one asking a single attempt still fetches', async () => {
    const { fetcher, deliveries } = setup({ maxInflight: 100, pollIntervalMs: 10_000 });
    const first = deliveries.pull('q', APP, 5, never);
    await new Promise((r) => setTimeout(r, 10));
    expect(fetcher.fetches).toBe(1);
    const later = Array.from({ length: 5 }, () => deliveries.pull('q', APP, 5, never));
    await new Promise((r) => setTimeout(r, 10));
    expect(fetcher.fetches).toBe(1);
    expect(await deliveries.pull('q', APP, 0, never)).toBeNull();
    expect(fetcher.fetches).toBe(2);
    // The wake-up serves them in arrival order, and the queue is asked again as it fills.
    fetcher.queue.push(message('a'), message('b'));
    deliveries.wake('q');
    expect((await first)?.messageId).toBe('a');
    expect((await later[0])?.messageId).toBe('b');
    deliveries.stopWaiting();
    expect(await Promise.all(later.slice(1))).toEqual(Array(4).fill(null));
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
    const got = await deliveries.pull('q', APP, 5, never);
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
    const got = await Promise.all(Array.from({ length: 6 }, () => deliveries.pull('q', APP, 5, never)));
    expect(got.map((d) => d?.messageId).sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    expect(most).toBeGreaterThan(1);
  });

  describe('per-application limits (decision 0081)', () => {
    it('an application holding its maximum of unacked deliveries gets 429; another application still pulls its message', async () => {
      const { fetcher, deliveries } = setup({ maxInflight: 10, maxInflightPerApp: 2 });
      fetcher.queue.push(message('a1'), message('a2'), message('b1'));
      await deliveries.pull('q', APP, 0, never);
      await deliveries.pull('q', APP, 0, never);
      await expect(deliveries.pull('q', APP, 0, never)).rejects.toBeInstanceOf(TooManyInflight);
      await expect(deliveries.pull('q', APP, 0, never)).rejects.toMatchObject({ code: 'too_many_inflight', reason: 'app_inflight', retryAfterSeconds: 1 });
      expect((await deliveries.pull('q', APP + 1, 0, never))?.messageId).toBe('b1');
    });

    it('an application with its maximum of waiting pulls gets 429; another application still waits and gets its message', async () => {
      const { fetcher, deliveries } = setup({ maxInflight: 10, maxWaitingPerApp: 2 });
      const waiting = [deliveries.pull('qa', APP, 5, never), deliveries.pull('qa2', APP, 5, never)];
      await expect(deliveries.pull('qa3', APP, 5, never)).rejects.toMatchObject({ reason: 'app_waiting' });
      const other = deliveries.pull('qb', APP + 1, 5, never);
      fetcher.queue.push(message('b1'));
      deliveries.wake('qb');
      expect((await other)?.messageId).toBe('b1');
      deliveries.stopWaiting();
      expect(await Promise.all(waiting)).toEqual([null, null]);
    });

    it('a pull held back by its application limit is served as soon as an ack frees a slot, not at its next poll', async () => {
      const { fetcher, deliveries } = setup({ maxInflight: 10, maxInflightPerApp: 1, pollIntervalMs: 250, pollMaxMs: 10_000 });
      const first = deliveries.pull('q1', APP, 5, never);
      const second = deliveries.pull('q2', APP, 5, never);
      fetcher.queue.push(message('m1'));
      deliveries.wake('q1');
      const held = await first;
      expect(held?.messageId).toBe('m1');
      // Wait for q2's backoff to grow, then a message for it arrives while the application is at its limit.
      await new Promise((r) => setTimeout(r, 800));
      fetcher.queue.push(message('m2'));
      deliveries.wake('q2');
      await new Promise((r) => setTimeout(r, 20));
      expect(fetcher.queue.map((m) => m.id)).toEqual(['m2']);
      const acked = Date.now();
      await deliveries.ack(held!.token, false);
      expect((await second)?.messageId).toBe('m2');
      expect(Date.now() - acked).toBeLessThan(200);
    });
  });

  describe('in-flight bytes (GATEWAY_MAX_INFLIGHT_BYTES)', () => {
    it('once the held messages reach the bound, further pulls get 429 until one is acked', async () => {
      const { fetcher, deliveries } = setup({ maxInflight: 10, maxInflightBytes: 3000 });
      fetcher.queue.push(message('a', 1500), message('b', 1500), message('c', 1500));
      const a = await deliveries.pull('q', APP, 0, never);
      await deliveries.pull('q', APP, 0, never);
      expect(deliveries.inflightBytes).toBe(3000);
      await expect(deliveries.pull('q', APP + 1, 0, never)).rejects.toMatchObject({ code: 'too_many_inflight', reason: 'process_bytes' });
      await deliveries.ack(a!.token, false);
      expect((await deliveries.pull('q', APP + 1, 0, never))?.messageId).toBe('c');
    });

    it('a message larger than the bound is still delivered when nothing else is held', async () => {
      const { fetcher, deliveries } = setup({ maxInflight: 10, maxInflightBytes: 2000 });
      fetcher.queue.push(message('big', 50_000), message('next', 10));
      const big = await deliveries.pull('q', APP, 0, never);
      expect(big?.messageId).toBe('big');
      await expect(deliveries.pull('q', APP, 0, never)).rejects.toMatchObject({ reason: 'process_bytes' });
      await deliveries.ack(big!.token, false);
      expect(deliveries.inflightBytes).toBe(0);
      expect((await deliveries.pull('q', APP, 0, never))?.messageId).toBe('next');
    });

    it('a backlog of large messages is fetched no wider than the bytes left allow', async () => {
      const { fetcher, deliveries } = setup({ maxInflight: 100, maxInflightBytes: 10_000 });
      for (let i = 0; i < 8; i += 1) fetcher.queue.push(message(`m${i}`, 4000));
      const pulls = Array.from({ length: 8 }, () => deliveries.pull('q', APP, 1, never));
      const got = await Promise.all(pulls);
      // 4000-byte messages under a 10000-byte bound: the third one crosses it, then nothing more is fetched.
      expect(got.filter((d) => d !== null).length).toBeLessThanOrEqual(4);
      expect(deliveries.inflightBytes).toBeLessThanOrEqual(10_000 + 4000 * 2);
    });
  });
});
