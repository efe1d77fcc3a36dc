// The worker session: bootstrap (with retries at start), re-bootstrap when a call answers 401,
// and the heartbeat.
import type { WorkerClient } from './client.js';
import { describe, isRetryable, isStatus } from './errors.js';
import type { Logger } from './logger.js';
import type { BootstrapRequest, BootstrapResponse, HeartbeatRequest } from './protocol.js';
import { backoffDelay, sleep } from './util.js';

export interface SessionOptions {
  request: BootstrapRequest;
  startupAttempts: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  /** Overrides the bootstrap's heartbeatIntervalSeconds. */
  heartbeatIntervalMs: number | undefined;
}

export type Counters = () => Omit<HeartbeatRequest, 'workerId'>;

export class Session {
  private info: BootstrapResponse | undefined;
  private refreshing: Promise<void> | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatFailing = false;

  constructor(
    private readonly client: WorkerClient,
    private readonly logger: Required<Logger>,
    private readonly options: SessionOptions,
  ) {}

  get current(): BootstrapResponse {
    if (this.info === undefined) throw new Error('the worker has not bootstrapped yet');
    return this.info;
  }

  get workerId(): string | undefined {
    return this.info?.workerId;
  }

  /** The first bootstrap; network errors and 5xx are retried `startupAttempts` times. */
  async bootstrap(signal: AbortSignal): Promise<BootstrapResponse> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.info = await this.client.bootstrap(this.options.request, signal);
        return this.info;
      } catch (err) {
        if (signal.aborted || !isRetryable(err) || attempt >= this.options.startupAttempts)
          throw err;
        const delay = backoffDelay(
          attempt - 1,
          this.options.retryBaseDelayMs,
          this.options.retryMaxDelayMs,
        );
        this.logger.warn('bootstrap failed; retrying', {
          attempt,
          delayMs: delay,
          error: describe(err),
        });
        await sleep(delay, signal);
      }
    }
  }

  /**
   * Bootstraps again unless someone already replaced `staleToken`. Concurrent callers share one
   * bootstrap. The workerId stays the same (it is stable per application and instanceId).
   */
  async refresh(staleToken: string): Promise<void> {
    if (this.info !== undefined && this.info.sessionToken !== staleToken) return;
    this.refreshing ??= (async () => {
      try {
        this.logger.info('worker session rejected (401); bootstrapping again', {
          workerId: this.info?.workerId,
        });
        this.info = await this.client.bootstrap(this.options.request);
      } finally {
        this.refreshing = undefined;
      }
    })();
    await this.refreshing;
  }

  /** Runs a session call; on 401 re-bootstraps once and runs it again with the new token. */
  async call<T>(fn: (token: string, workerId: string) => Promise<T>): Promise<T> {
    if (this.refreshing !== undefined) await this.refreshing.catch(() => undefined);
    const { sessionToken, workerId } = this.current;
    try {
      return await fn(sessionToken, workerId);
    } catch (err) {
      if (!isStatus(err, 401)) throw err;
      await this.refresh(sessionToken);
      const next = this.current;
      return fn(next.sessionToken, next.workerId);
    }
  }

  startHeartbeat(counters: Counters): void {
    const intervalMs =
      this.options.heartbeatIntervalMs ?? Math.max(1, this.current.heartbeatIntervalSeconds) * 1000;
    const beat = async () => {
      try {
        await this.call((token, workerId) =>
          this.client.heartbeat(token, { workerId, ...counters() }),
        );
        if (this.heartbeatFailing) this.logger.info('heartbeats are being accepted again');
        this.heartbeatFailing = false;
      } catch (err) {
        if (!this.heartbeatFailing) this.logger.warn('heartbeat failed', { error: describe(err) });
        this.heartbeatFailing = true;
      }
      if (this.heartbeatTimer !== undefined) schedule();
    };
    const schedule = () => {
      this.heartbeatTimer = setTimeout(() => void beat(), intervalMs);
      this.heartbeatTimer.unref();
    };
    schedule();
  }

  stopHeartbeat(): void {
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  /** Announces the stop. Shutdown checks the current token but not its expiry. */
  async shutdown(reason: string): Promise<void> {
    if (this.info === undefined) return;
    await this.call((token, workerId) => this.client.shutdown(token, { workerId, reason }));
  }
}
