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

/**
 * Deliveries held by this process (api-spec Behaviour rules 1–2): a pull hands out a token that
 * only this process knows; an ack completes or requeues it; a delivery not acked within the
 * visibility timeout goes back to its queue. If the process dies, BullMQ's lock (lasting the same
 * timeout) lapses and the stalled check of any gateway requeues the message.
 */
export class Deliveries {
  private readonly held = new Map<string, Held>();
  private readonly waiters = new Map<string, Set<() => void>>();
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
   * Long-polls one queue: returns as soon as a message is there (a wake-up from the publisher, or
   * the 250 ms poll at the latest), or null at the deadline or when `signal` aborts.
   */
  async pull(queue: string, waitSeconds: number, signal: AbortSignal): Promise<Delivery | null> {
    const deadline = this.now() + waitSeconds * 1000;
    for (;;) {
      if (signal.aborted || this.closing) return null;
      this.reserved += 1;
      // The BullMQ lock (visibility timeout) starts during the fetch: count the timeout from before it.
      const fetchStartedAt = this.now();
      let fetched: FetchedMessage | null;
      try {
        fetched = await this.fetcher.fetch(queue);
      } finally {
        this.reserved -= 1;
      }
      if (fetched) {
        if (signal.aborted) {
          // The client left while we fetched: give the message straight back.
          await this.fetcher.requeue(fetched);
          return null;
        }
        return this.hold(queue, fetched, fetchStartedAt);
      }
      const remaining = deadline - this.now();
      if (remaining <= 0) return null;
      await this.waitForWake(queue, Math.min(remaining, this.options.pollIntervalMs), signal);
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
    const waiting = this.waiters.get(queue);
    if (!waiting) return;
    this.waiters.delete(queue);
    for (const resolve of waiting) resolve();
  }

  private waitForWake(queue: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(queue);
      if (!set) this.waiters.set(queue, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
    });
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
    for (const queue of [...this.waiters.keys()]) this.wake(queue);
  }

  /** On shutdown: stop sweeping and give every held delivery back so others can take it now. */
  async releaseAll(): Promise<void> {
    clearInterval(this.sweepTimer);
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.allSettled(all.map((h) => this.fetcher.requeue(h.message)));
  }
}
