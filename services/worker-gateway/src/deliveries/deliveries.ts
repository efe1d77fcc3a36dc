import { randomBytes } from 'node:crypto';
import { DomainError, fetchRoom, pullRefusal, type DeliveryLimits, type PullRefusal } from '@po/domain';
import { lostLock, type FetchedMessage, type StageNextFetcher, type StageNextJob } from '@po/queues';
import { visibilityRequeues, type Logger } from '@po/telemetry';

export interface Delivery {
  token: string;
  queue: string;
  messageId: string;
  /** The job as queued: its context may be named by a snapshot, resolved when answered (decision 0121). */
  payload: StageNextJob;
  /** When the fetch that found the message began (epoch ms): the pull span starts there. */
  fetchStartedAt: number;
  /**
   * The message waited for a place of its handler's maxConcurrent, not for the pull: its queue has
   * a backlog, which the pull's wait cannot show the worker (PullJobResponse.backlog, decision 0132).
   */
  backlog?: true;
}

interface Held {
  message: FetchedMessage;
  queue: string;
  applicationId: number;
  expiresAt: number;
  /** The place it holds of a queue held to its handler's maxConcurrent (decision 0132), and when that lapses. */
  place?: string;
  placeLapsesAt?: number;
}

export interface DeliveriesOptions extends DeliveryLimits {
  visibilityTimeoutMs: number;
  pollIntervalMs: number;
  /** The safety poll doubles from pollIntervalMs up to this while a queue stays empty. */
  pollMaxMs: number;
}

const DETAILS: Record<PullRefusal | 'queues', (o: DeliveriesOptions) => string> = {
  process_inflight: (o) => `This gateway process holds ${o.maxInflight} deliveries; back off and retry.`,
  process_bytes: (o) => `This gateway process holds ${o.maxInflightBytes} bytes of deliveries; back off and retry.`,
  app_inflight: (o) => `This application holds ${o.maxInflightPerApp} unacknowledged deliveries on this gateway process; ack them, or back off and retry.`,
  app_waiting: (o) => `This application has ${o.maxWaitingPerApp} pulls waiting on this gateway process; back off and retry.`,
  queues: () => 'This gateway process serves as many queues as it may at once; back off and retry.',
};

/** 429 too_many_inflight (addendum §3, §15): a limit of decision 0081 refuses the pull before it waits. */
export class TooManyInflight extends DomainError {
  readonly retryAfterSeconds = 1;
  constructor(
    readonly reason: PullRefusal | 'queues',
    options: DeliveriesOptions,
  ) {
    super('too_many_inflight', DETAILS[reason](options), true);
  }
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
  applicationId: number;
  waiters: Waiter[];
  fetching: boolean;
  /** A wake-up (or a new waiter) arrived during a fetch: fetch again when it is done. */
  again: boolean;
  /** The last round found no room (limits): the next release of a delivery starts it again. */
  blocked: boolean;
  /**
   * The last round found every place of the queue taken (a handler's maxConcurrent): wake-ups of
   * new messages do not start it, a place given back here or the safety poll does.
   */
  full: boolean;
  /** This round follows one that found every place taken: what it fetches waited for a place. */
  afterFull: boolean;
  /**
   * The last round found the queue empty and no wake-up came during it: a pull that joins now
   * waits for the next wake-up or safety poll with the others instead of asking Redis again.
   */
  empty: boolean;
  poll: NodeJS.Timeout | undefined;
  /** The next safety poll's delay: doubles while the queue stays empty, back to the start when a message comes. */
  pollDelayMs: number;
  /** The largest message of the last round that found any, for the byte limit's fetch width. */
  typicalBytes: number;
}

/** An application's share of this process. */
interface AppLoad {
  held: number;
  reserved: number;
  waiting: number;
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
 * serves them, started by a pull or by a pub/sub wake-up, so a message wakes one fetch, not every
 * waiting pull. A wake-up that arrives during a fetch makes the loop fetch again (none is lost);
 * while every fetch finds a message the loop doubles how many it sends at once (pipelined), up to
 * one per waiting pull. A safety poll covers a lost wake-up, backing off while the queue stays
 * empty (decision 0081). Limits per process and per application (decision 0081) refuse a pull
 * before it waits and narrow what a loop fetches.
 */
export class Deliveries {
  private readonly held = new Map<string, Held>();
  private readonly feeds = new Map<string, Feed>();
  private readonly apps = new Map<number, AppLoad>();
  private reserved = 0;
  /** Place ids (decision 0132): unique per process, counted rather than drawn at random. */
  private readonly placePrefix = randomBytes(9).toString('base64url');
  private placeSeq = 0;
  private heldBytes = 0;
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

  get inflightBytes(): number {
    return this.heldBytes;
  }

  private app(applicationId: number): AppLoad {
    let load = this.apps.get(applicationId);
    if (!load) this.apps.set(applicationId, (load = { held: 0, reserved: 0, waiting: 0 }));
    return load;
  }

  private forgetIfIdle(applicationId: number): void {
    const load = this.apps.get(applicationId);
    if (load && load.held + load.reserved + load.waiting === 0) this.apps.delete(applicationId);
  }

  /**
   * The load a limit is checked against. Fetching reserves slots so a round never fetches past a
   * limit; a new pull of that application is not refused for them, since most rounds find the
   * queue empty and those waiting pulls are already counted.
   */
  private load(applicationId: number, forFetch: boolean) {
    const app = this.apps.get(applicationId);
    return {
      inflight: this.held.size + this.reserved,
      inflightBytes: this.heldBytes,
      appInflight: (app?.held ?? 0) + (forFetch ? (app?.reserved ?? 0) : 0),
      appWaiting: app?.waiting ?? 0,
    };
  }

  /**
   * Long-polls one queue of `applicationId`: resolves with a delivery as soon as one is fetched for
   * this pull, or with null at the deadline (at once for waitSeconds 0, after one fetch) or when
   * `signal` aborts. Rejects with TooManyInflight, before waiting, when a limit is reached.
   */
  async pull(queue: string, applicationId: number, waitSeconds: number, signal: AbortSignal): Promise<Delivery | null> {
    if (signal.aborted || this.closing) return null;
    const refusal = pullRefusal(this.load(applicationId, false), this.options);
    if (refusal) throw new TooManyInflight(refusal, this.options);
    const feed = this.feedOf(queue, applicationId);
    const app = this.app(applicationId);
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
        app.waiting -= 1;
        this.forgetIfIdle(applicationId);
        if (feed.waiters.length === 0) this.idle(queue, feed);
      };
      feed.waiters.push(waiter);
      app.waiting += 1;
      // One that asked for a single attempt gets it; otherwise a queue known to be empty is not asked again.
      if (waiter.once || !feed.empty) this.kick(queue, feed);
    });
  }

  private feedOf(queue: string, applicationId: number): Feed {
    const found = this.feeds.get(queue);
    if (found) return found;
    // The queue's BullMQ worker stays open while pulls wait on it.
    if (!this.fetcher.acquire(queue)) throw new TooManyInflight('queues', this.options);
    const feed: Feed = {
      applicationId,
      waiters: [],
      fetching: false,
      again: false,
      blocked: false,
      full: false,
      afterFull: false,
      empty: false,
      poll: undefined,
      pollDelayMs: this.options.pollIntervalMs,
      typicalBytes: 0,
    };
    this.feeds.set(queue, feed);
    return feed;
  }

  private idle(queue: string, feed: Feed): void {
    if (feed.fetching || feed.waiters.length > 0 || this.feeds.get(queue) !== feed) return;
    clearTimeout(feed.poll);
    this.feeds.delete(queue);
    this.fetcher.release(queue);
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
    feed.blocked = false;
    feed.empty = false;
    feed.afterFull = feed.full;
    feed.full = false;
    void this.serve(queue, feed)
      .catch((err: unknown) => {
        this.logger.warn({ err, queue }, 'fetching deliveries failed');
        // Pulls that asked for one attempt get their answer; the others wait for the next poll.
        for (const w of [...feed.waiters]) if (w.once) w.resolve(null);
      })
      .finally(() => {
        feed.fetching = false;
        if (feed.waiters.length === 0) return this.idle(queue, feed);
        if (feed.again && !feed.full) return this.kick(queue, feed);
        if (this.closing) return;
        feed.poll = setTimeout(() => this.kick(queue, feed), feed.pollDelayMs);
        feed.pollDelayMs = Math.min(feed.pollDelayMs * 2, Math.max(this.options.pollIntervalMs, this.options.pollMaxMs));
      });
  }

  private async serve(queue: string, feed: Feed): Promise<void> {
    // A lone message costs its fetch and one that finds the queue empty; a backlog widens the rounds.
    let width = 1;
    let full = 0;
    for (;;) {
      feed.again = false;
      if (this.closing) return;
      const wanted = Math.min(width, feed.waiters.length, MAX_FETCH);
      if (wanted === 0) return;
      let n = fetchRoom(this.load(feed.applicationId, true), this.options, wanted, feed.typicalBytes);
      if (n === 0) {
        feed.blocked = true;
        return;
      }
      // A queue held to its handler's maxConcurrent: a place for each fetch first (decision 0132).
      let places: string[] = [];
      let placesLapseAt = 0;
      await this.fetcher.limitKnown(queue);
      if (this.fetcher.limited(queue)) {
        const ids = Array.from({ length: n }, () => `${this.placePrefix}.${(this.placeSeq += 1)}`);
        placesLapseAt = this.now() + this.options.visibilityTimeoutMs;
        n = await this.fetcher.takePlaces(queue, ids);
        if (n === 0) {
          // Every place is out: a place given back here (an ack) or the safety poll tries again;
          // wake-ups of new messages would only ask again for nothing.
          for (const w of [...feed.waiters]) if (w.once) w.resolve(null);
          feed.full = true;
          feed.empty = true;
          return;
        }
        places = ids.slice(0, n);
      }
      // The pull span starts here; the visibility timeout counts from each message's own fetch (hold).
      const fetchStartedAt = this.now();
      const app = this.app(feed.applicationId);
      this.reserved += n;
      app.reserved += n;
      let fetched: (FetchedMessage | null)[];
      try {
        fetched = await Promise.all(Array.from({ length: n }, () => this.fetcher.fetch(queue)));
      } catch (err) {
        this.fetcher.releasePlaces(queue, places);
        throw err;
      } finally {
        this.reserved -= n;
        app.reserved -= n;
      }
      const messages = fetched.filter((m): m is FetchedMessage => m !== null);
      this.fetcher.releasePlaces(queue, places.slice(messages.length));
      if (messages.length > 0) {
        feed.pollDelayMs = this.options.pollIntervalMs;
        feed.typicalBytes = Math.max(...messages.map((m) => m.bytes));
      }
      for (const [i, message] of messages.entries()) {
        const waiter = feed.waiters.find((w) => !w.done);
        const place = places[i] === undefined ? undefined : { id: places[i]!, lapsesAt: placesLapseAt };
        if (waiter) waiter.resolve(this.hold(queue, feed.applicationId, message, fetchStartedAt, place, feed.afterFull && place !== undefined));
        else {
          // The pull left while we fetched: give the message straight back, and its place.
          this.fetcher.releasePlaces(queue, places.slice(i, i + 1));
          await this.fetcher.requeue(message);
        }
      }
      feed.afterFull = false;
      if (messages.length < n) {
        // Slots reserved but not filled are free again for queues this round kept waiting.
        this.unblock();
        // The queue is empty: pulls that asked for one attempt have had it.
        for (const w of [...feed.waiters]) if (w.once) w.resolve(null);
        if (!feed.again) {
          feed.empty = true;
          return;
        }
        width = 1;
        full = 0;
      } else {
        full += 1;
        if (full > 1) width = Math.min(width * 2, MAX_FETCH);
      }
    }
  }

  private hold(queue: string, applicationId: number, message: FetchedMessage, fetchStartedAt: number, place?: { id: string; lapsesAt: number }, backlog = false): Delivery {
    const token = randomBytes(24).toString('base64url');
    // The BullMQ lock (visibility timeout) starts when the job holding the message was fetched, from
    // before that call; a message of a batch may have waited in the fetcher since: the delivery must
    // not outlast the lock, or a stalled check could hand the message out while it is held here.
    const expiresAt = message.fetchedAt + this.options.visibilityTimeoutMs;
    this.held.set(token, { message, queue, applicationId, expiresAt, ...(place ? { place: place.id, placeLapsesAt: place.lapsesAt } : {}) });
    this.heldBytes += message.bytes;
    this.app(applicationId).held += 1;
    return { token, queue, messageId: message.id, payload: message.data, fetchStartedAt, ...(backlog ? { backlog: true as const } : {}) };
  }

  /** Forgets a held delivery; queues that a limit kept waiting may fetch again. */
  private drop(token: string, held: Held): void {
    this.held.delete(token);
    this.heldBytes -= held.message.bytes;
    const app = this.apps.get(held.applicationId);
    if (app) app.held -= 1;
    this.forgetIfIdle(held.applicationId);
    this.unblock();
  }

  private unblock(): void {
    for (const [queue, feed] of this.feeds) if (feed.blocked && feed.waiters.length > 0) this.kick(queue, feed);
  }

  /** The message of a delivery this process holds and whose visibility timeout has not passed. */
  heldMessage(token: string): StageNextJob | undefined {
    const held = this.held.get(token);
    return held && held.expiresAt > this.now() ? held.message.data : undefined;
  }

  /** Ack (requeue=false completes; requeue=true returns the same message at once). False when not held here. */
  async ack(token: string, requeue: boolean): Promise<boolean> {
    const held = this.held.get(token);
    if (!held) return false;
    const limited = this.fetcher.limited(held.queue);
    this.drop(token, held);
    if (held.expiresAt <= this.now()) {
      // Past the visibility timeout the delivery is no longer held (404), even if no sweep ran yet.
      await this.requeueExpired(held);
      return false;
    }
    // A place that pulls here wait for goes on to the first of them with the next message, taken
    // in the same broker call as the ack (as an ack carrying the worker's next pull does).
    const waiting = !requeue && held.place !== undefined && (this.feeds.get(held.queue)?.waiters.some((w) => !w.done) ?? false);
    const room = waiting && fetchRoom(this.load(held.applicationId, true), this.options, 1, held.message.bytes) > 0;
    const fetchStartedAt = this.now();
    let next: FetchedMessage | null = null;
    try {
      if (requeue) await this.fetcher.requeue(held.message);
      else if (room) next = await this.fetcher.completeAndFetch(held.message);
      else await this.fetcher.complete(held.message);
    } catch (err) {
      // The job is not ours any more (its lock lapsed and the stalled check took it back): not held (404).
      if (lostLock(err)) {
        this.givePlaceBack(held, limited);
        return false;
      }
      // Redis did not answer (an outage, a command timeout): the delivery is still this process's,
      // so the worker's retry of the ack can succeed; the visibility sweep returns it otherwise.
      this.restore(token, held);
      throw err;
    }
    if (next) {
      const first = this.feeds.get(held.queue)?.waiters.find((w) => !w.done);
      // The message was there when the place came back: a backlog that waited for places.
      if (first) first.resolve(this.hold(held.queue, held.applicationId, next, fetchStartedAt, this.handedOn(held), true));
      else {
        // The pull left meanwhile: the message goes back, and its place.
        this.givePlaceBack(held, false);
        await this.fetcher.requeue(next).catch((err: unknown) => this.logger.warn({ err, queue: held.queue }, 'requeue of a message no pull took failed; its lock lapses'));
      }
      return true;
    }
    this.givePlaceBack(held, limited);
    return true;
  }

  /** A place of a queue held to its handler's maxConcurrent is free again: a pull waiting here takes it. */
  private givePlaceBack(held: Held, limited: boolean): void {
    if (held.place) this.fetcher.releasePlaces(held.queue, [held.place]);
    if (limited) this.handOn(held.queue);
  }

  /** Pulls waiting on the queue fetch now, even if its places were all taken at their last round. */
  private handOn(queue: string): void {
    const feed = this.feeds.get(queue);
    if (feed && feed.waiters.length > 0) this.kick(queue, feed);
  }

  private restore(token: string, held: Held): void {
    // The fetcher let go of its queue with the failed call; the held delivery keeps it open again.
    this.fetcher.acquire(held.queue);
    this.held.set(token, held);
    this.heldBytes += held.message.bytes;
    this.app(held.applicationId).held += 1;
  }

  /**
   * An ack (requeue=false) with the pull that follows it on the same queue as one broker call
   * (decision 0110): BullMQ completes the message and takes the next one in one script. `delivery`
   * is absent when it cannot go that way — not held here, another queue, pulls already waiting on
   * that one, a limit — and the caller pulls as usual; null when the queue had nothing. Pulls
   * waiting on a queue held to its handler's maxConcurrent wait for a place, not for a message: the
   * place this ack frees goes with the ack, as it would have without them.
   */
  async ackAndTake(token: string, queue: string, applicationId: number): Promise<{ acked: boolean; delivery?: Delivery | null }> {
    const held = this.held.get(token);
    const limited = this.fetcher.limited(queue);
    const waiting = (this.feeds.get(queue)?.waiters.length ?? 0) > 0 && !limited;
    // A delivery of a limited queue without a place (fetched before the limit was seen) has none to hand on.
    const placeless = limited && !held?.place;
    if (!held || held.queue !== queue || held.applicationId !== applicationId || held.expiresAt <= this.now() || waiting || placeless || this.closing) {
      return { acked: await this.ack(token, false) };
    }
    this.drop(token, held);
    if (pullRefusal(this.load(applicationId, false), this.options) || fetchRoom(this.load(applicationId, true), this.options, 1, held.message.bytes) === 0) {
      await this.fetcher.complete(held.message);
      this.givePlaceBack(held, limited);
      return { acked: true };
    }
    const fetchStartedAt = this.now();
    const app = this.app(applicationId);
    this.reserved += 1;
    app.reserved += 1;
    let next: FetchedMessage | null;
    try {
      next = await this.fetcher.completeAndFetch(held.message);
    } catch (err) {
      this.givePlaceBack(held, false);
      throw err;
    } finally {
      this.reserved -= 1;
      app.reserved -= 1;
    }
    if (!next) {
      this.givePlaceBack(held, false);
      return { acked: true, delivery: null };
    }
    // The acked delivery's place goes on with the next one, which the ack took (decision 0132).
    return { acked: true, delivery: this.hold(queue, applicationId, next, fetchStartedAt, this.handedOn(held)) };
  }

  /**
   * The place of an acked delivery, for the next message it goes on with: that must not lapse
   * before the new delivery's visibility timeout, so it is renewed once half its time is gone (a
   * place handed on many times costs Redis nothing most times). Undefined without a place.
   */
  private handedOn(held: Held): { id: string; lapsesAt: number } | undefined {
    if (!held.place) return undefined;
    const lapsesAt = held.placeLapsesAt ?? 0;
    if (lapsesAt - this.now() >= this.options.visibilityTimeoutMs / 2) return { id: held.place, lapsesAt };
    return { id: held.place, lapsesAt: this.fetcher.renewPlace(held.queue, held.place) };
  }

  /** Called when a queue gained a message (pub/sub wake-up). */
  wake(queue: string): void {
    const feed = this.feeds.get(queue);
    if (feed && feed.waiters.length > 0 && !feed.full) this.kick(queue, feed);
  }

  /**
   * A queue's places' limit changed (a handler's maxConcurrent set or cleared, decision 0132): it is
   * read again before its waiting pulls fetch, so none fetches by the old rule.
   */
  limitChanged(queue: string): void {
    this.fetcher.refreshLimit(queue).then(
      () => this.handOn(queue),
      () => this.handOn(queue),
    );
  }

  /** Every waiting queue fetches now, its limit read again: messages may have been lost (the subscription reconnected). */
  wakeAll(): void {
    for (const queue of [...this.feeds.keys()]) this.limitChanged(queue);
  }

  /** Requeues deliveries whose visibility timeout passed. */
  async sweepExpired(): Promise<number> {
    const now = this.now();
    let requeued = 0;
    for (const [token, held] of this.held) {
      if (held.expiresAt > now) continue;
      this.drop(token, held);
      if (await this.requeueExpired(held)) requeued += 1;
    }
    return requeued;
  }

  private async requeueExpired(held: Held): Promise<boolean> {
    try {
      const limited = this.fetcher.limited(held.queue);
      await this.fetcher.requeue(held.message);
      visibilityRequeues().inc();
      this.givePlaceBack(held, limited);
      return true;
    } catch (err) {
      // The BullMQ lock lapsed too; the stalled check returns the message instead.
      this.logger.warn({ err, queue: held.queue }, 'visibility-timeout requeue failed');
      return false;
    }
  }

  startSweeping(intervalMs = 1000): void {
    this.sweepTimer = setInterval(() => {
      void this.sweepExpired();
      // Messages of a batch no pull took within a second go back to their queue for any gateway.
      void this.fetcher.sweepBuffered().catch((err: unknown) => this.logger.warn({ err }, 'returning buffered messages failed'));
    }, intervalMs);
    this.sweepTimer.unref();
  }

  /** On shutdown, first: waiting pulls answer 204 now instead of holding the HTTP server open. */
  stopWaiting(): void {
    this.closing = true;
    for (const feed of [...this.feeds.values()]) for (const w of [...feed.waiters]) w.resolve(null);
  }

  /** On shutdown: stop sweeping and give every held delivery, and every buffered message, back so others can take it now. */
  async releaseAll(): Promise<void> {
    clearInterval(this.sweepTimer);
    const all = [...this.held.values()];
    for (const h of all) if (h.place) this.fetcher.releasePlaces(h.queue, [h.place]);
    this.held.clear();
    this.heldBytes = 0;
    this.apps.clear();
    await Promise.allSettled([...all.map((h) => this.fetcher.requeue(h.message)), this.fetcher.sweepBuffered(0)]);
  }
}
