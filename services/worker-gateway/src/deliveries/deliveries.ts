import { randomBytes } from 'node:crypto';
import type { FetchedMessage, StageNextFetcher, StageNextMessage } from '@po/queues';
import { visibilityRequeues, type Logger } from '@po/telemetry';

export interface Delivery {
  token: string;
  queue: string;
  messageId: string;
  payload: StageNextMessage;
  /** When the fetch that found the message began (epoch ms): the pull span starts there. */
  fetchStartedAt: number;
}

interface Held {
  message: FetchedMessage;
  queue: string;
  expiresAt: number;
}

export interface DeliveriesOptions {
  maxInflight: number;
  visibilityTimeoutMs: number;
  pollIntervalMs: number;
}

/** A pull waiting for a message of its queue. */
interface Waiter {
  resolve: (delivery: Delivery | null) => void;
  /** waitSeconds 0: one fetch attempt, then null. */
  once: boolean;
  done: boolean;
  cleanup: () => void;
}

/** The pulls waiting on one queue, and whether a fetch for them is running. */
interface Feed {
  waiters: Waiter[];
  fetching: boolean;
  /** A wake-up (or a new waiter) arrived during a fetch: fetch again when it is done. */
  again: boolean;
  poll: NodeJS.Timeout | undefined;
}

/** The most fetches sent at once for one queue (pipelined on one connection). */
const MAX_FETCH = 32;

/**
 * Deliveries held by this process (api-spec Behaviour rules 1–2): a pull hands out a token that
 * only this process knows; an ack completes or requeues it; a delivery not acked within the
 * visibility timeout goes back to its queue. If the process dies, BullMQ's lock (lasting the same
 * timeout) lapses and the stalled check of any gateway requeues the message.
 *
 * Waiting pulls queue per queue, first come first served (decision 0064): one fetch loop per queue
 * serves them, started by a pull, by a pub/sub wake-up, or by the 250 ms poll while pulls wait, so
 * a message wakes one fetch, not every waiting pull. A wake-up that arrives during a fetch makes the
 * loop fetch again (none is lost); while every fetch finds a message the loop doubles how many it
 * sends at once (pipelined), up to one per waiting pull.
 */
export class Deliveries {
  private readonly held = new Map<string, Held>();
  private readonly feeds = new Map<string, Feed>();
  private reserved = 0;
  private closing = false;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fetcher: StageNextFetcher,
    private readonly options: DeliveriesOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  get inflight(): number {
    return this.held.size;
  }

  /** True when a pull must get 429 before it waits at all. */
  full(): boolean {
    return this.held.size + this.reserved >= this.options.maxInflight;
  }

  /**
   * Long-polls one queue: resolves with a delivery as soon as one is fetched for this pull, or with
   * null at the deadline (at once for waitSeconds 0, after one fetch) or when `signal` aborts.
   */
  pull(queue: string, waitSeconds: number, signal: AbortSignal): Promise<Delivery | null> {
    if (signal.aborted || this.closing) return Promise.resolve(null);
    const feed = this.feedOf(queue);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        once: waitSeconds <= 0,
        done: false,
        resolve: (delivery) => {
          if (waiter.done) return;
          waiter.done = true;
          waiter.cleanup();
          resolve(delivery);
        },
        cleanup: () => undefined,
      };
      const timer = waitSeconds > 0 ? setTimeout(() => waiter.resolve(null), waitSeconds * 1000) : undefined;
      const onAbort = () => waiter.resolve(null);
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const i = feed.waiters.indexOf(waiter);
        if (i >= 0) feed.waiters.splice(i, 1);
        if (feed.waiters.length === 0) this.idle(queue, feed);
      };
      feed.waiters.push(waiter);
      this.kick(queue, feed);
    });
  }

  private feedOf(queue: string): Feed {
    let feed = this.feeds.get(queue);
    if (!feed) this.feeds.set(queue, (feed = { waiters: [], fetching: false, again: false, poll: undefined }));
    return feed;
  }

  private idle(queue: string, feed: Feed): void {
    if (feed.fetching || feed.waiters.length > 0) return;
    clearTimeout(feed.poll);
    this.feeds.delete(queue);
  }

  /** Starts the queue's fetch loop, or tells the running one to go round again. */
  private kick(queue: string, feed: Feed): void {
    if (feed.fetching) {
      feed.again = true;
      return;
    }
    clearTimeout(feed.poll);
    feed.poll = undefined;
    feed.fetching = true;
    void this.serve(queue, feed)
      .catch((err: unknown) => {
        this.logger.warn({ err, queue }, 'fetching deliveries failed');
        // Pulls that asked for one attempt get their answer; the others wait for the next poll.
        for (const w of [...feed.waiters]) if (w.once) w.resolve(null);
      })
      .finally(() => {
        feed.fetching = false;
        if (feed.waiters.length === 0) return this.idle(queue, feed);
        if (feed.again) return this.kick(queue, feed);
        if (!this.closing) feed.poll = setTimeout(() => this.kick(queue, feed), this.options.pollIntervalMs);
      });
  }

  private async serve(queue: string, feed: Feed): Promise<void> {
    // A lone message costs its fetch and one that finds the queue empty; a backlog widens the rounds.
    let width = 1;
    let full = 0;
    for (;;) {
      feed.again = false;
      const room = this.options.maxInflight - this.held.size - this.reserved;
      const n = Math.min(width, feed.waiters.length, MAX_FETCH, Math.max(0, room));
      if (n === 0 || this.closing) return;
      // The BullMQ lock (visibility timeout) starts during the fetch: count the timeout from before it.
      const fetchStartedAt = this.now();
      this.reserved += n;
      let fetched: (FetchedMessage | null)[];
      try {
        fetched = await Promise.all(Array.from({ length: n }, () => this.fetcher.fetch(queue)));
      } finally {
        this.reserved -= n;
      }
      const messages = fetched.filter((m): m is FetchedMessage => m !== null);
      for (const message of messages) {
        const waiter = feed.waiters.find((w) => !w.done);
        if (waiter) waiter.resolve(this.hold(queue, message, fetchStartedAt));
        // The pull left while we fetched: give the message straight back.
        else await this.fetcher.requeue(message);
      }
      if (messages.length < n) {
        // The queue is empty: pulls that asked for one attempt have had it.
        for (const w of [...feed.waiters]) if (w.once) w.resolve(null);
        if (!feed.again) return;
        width = 1;
        full = 0;
      } else {
        full += 1;
        if (full > 1) width = Math.min(width * 2, MAX_FETCH);
      }
    }
  }

  private hold(queue: string, message: FetchedMessage, fetchStartedAt: number): Delivery {
    const token = randomBytes(24).toString('base64url');
    this.held.set(token, { message, queue, expiresAt: fetchStartedAt + this.options.visibilityTimeoutMs });
    return { token, queue, messageId: String(message.job.id), payload: message.job.data, fetchStartedAt };
  }

  /** Ack (requeue=false completes; requeue=true returns the same message at once). False when not held here. */
  async ack(token: string, requeue: boolean): Promise<boolean> {
    const held = this.held.get(token);
    if (!held) return false;
    this.held.delete(token);
    if (held.expiresAt <= this.now()) {
      // Past the visibility timeout the delivery is no longer held (404), even if no sweep ran yet.
      await this.requeueExpired(held);
      return false;
    }
    if (requeue) await this.fetcher.requeue(held.message);
    else await this.fetcher.complete(held.message);
    return true;
  }

  /** Called when a queue gained a message (pub/sub wake-up). */
  wake(queue: string): void {
    const feed = this.feeds.get(queue);
    if (feed && feed.waiters.length > 0) this.kick(queue, feed);
  }

  /** Requeues deliveries whose visibility timeout passed. */
  async sweepExpired(): Promise<number> {
    const now = this.now();
    let requeued = 0;
    for (const [token, held] of this.held) {
      if (held.expiresAt > now) continue;
      this.held.delete(token);
      if (await this.requeueExpired(held)) requeued += 1;
    }
    return requeued;
  }

  private async requeueExpired(held: Held): Promise<boolean> {
    try {
      await this.fetcher.requeue(held.message);
      visibilityRequeues().inc();
      return true;
    } catch (err) {
      // The BullMQ lock lapsed too; the stalled check returns the message instead.
      this.logger.warn({ err, queue: held.queue }, 'visibility-timeout requeue failed');
      return false;
    }
  }

  startSweeping(intervalMs = 1000): void {
    this.sweepTimer = setInterval(() => void this.sweepExpired(), intervalMs);
    this.sweepTimer.unref();
  }

  /** On shutdown, first: waiting pulls answer 204 now instead of holding the HTTP server open. */
  stopWaiting(): void {
    this.closing = true;
    for (const feed of [...this.feeds.values()]) for (const w of [...feed.waiters]) w.resolve(null);
  }

  /** On shutdown: stop sweeping and give every held delivery back so others can take it now. */
  async releaseAll(): Promise<void> {
    clearInterval(this.sweepTimer);
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.allSettled(all.map((h) => this.fetcher.requeue(h.message)));
  }
}
