// Lifecycle events, batched and sent in the background (POST /workers/events). Best effort:
// push() never blocks and never throws; a full buffer drops its oldest events.
import { ApiError, describe, ProtocolError } from './errors.js';
import type { Logger } from './logger.js';
import { LIMITS } from './protocol.js';
import type { WorkerEvent } from './protocol.js';
import { nowIso, truncate, within } from './util.js';

export type SendEvents = (events: WorkerEvent[]) => Promise<void>;

export interface EventBatcherOptions {
  enabled: boolean;
  flushIntervalMs: number;
  /** Events per call; default 100 (WORKER_EVENTS_MAX_BATCH). */
  maxBatch?: number;
  /** Events kept while the server is unreachable; default 1000. */
  maxBuffered?: number;
}

export class EventBatcher {
  private buffer: WorkerEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;
  private failing = false;
  private readonly maxBatch: number;
  private readonly maxBuffered: number;

  constructor(
    private readonly send: SendEvents,
    private readonly logger: Required<Logger>,
    private readonly options: EventBatcherOptions,
  ) {
    this.maxBatch = Math.min(options.maxBatch ?? LIMITS.eventsPerBatch, LIMITS.eventsPerBatch);
    this.maxBuffered = Math.max(options.maxBuffered ?? 1000, this.maxBatch);
  }

  start(): void {
    if (!this.options.enabled || this.timer !== undefined) return;
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  /** Queues an event (`at` defaults to now). */
  push(event: WorkerEvent): void {
    if (!this.options.enabled) return;
    const item: WorkerEvent = { ...event, at: event.at ?? nowIso() };
    if (item.message !== undefined) item.message = truncate(item.message, LIMITS.eventMessageChars);
    this.buffer.push(item);
    this.trim();
    if (this.buffer.length >= this.maxBatch && !this.failing) void this.flush();
  }

  /** Sends everything buffered; resolves when done or when the server could not be reached. */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Stops the timer and makes a last attempt to send, bounded by `timeoutMs`. */
  async close(timeoutMs: number): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.options.enabled) return;
    await within(this.flush(), timeoutMs);
    if (this.buffer.length > 0) {
      this.logger.debug('unsent lifecycle events discarded', { count: this.buffer.length });
    }
  }

  get pending(): number {
    return this.buffer.length;
  }

  private trim(): void {
    const excess = this.buffer.length - this.maxBuffered;
    if (excess > 0) {
      this.buffer.splice(0, excess);
      this.dropped += excess;
    }
  }

  private async drain(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.maxBatch);
      try {
        await this.send(batch);
        if (this.failing) this.logger.info('lifecycle events are being delivered again');
        this.failing = false;
        if (this.dropped > 0) {
          this.logger.warn('lifecycle events were dropped while the server was unreachable', {
            count: this.dropped,
          });
          this.dropped = 0;
        }
      } catch (err) {
        if ((err instanceof ApiError && err.status === 400) || err instanceof ProtocolError) {
          this.logger.warn('the server rejected a batch of lifecycle events; dropping it', {
            count: batch.length,
            error: describe(err),
          });
          continue;
        }
        this.buffer.unshift(...batch);
        this.trim();
        if (!this.failing) {
          this.logger.warn('lifecycle events could not be sent; will retry', {
            error: describe(err),
          });
        }
        this.failing = true;
        return;
      }
    }
  }
}
