// Background lease renewal for one execution, and the lease's expiry on the SDK's own clock
// (decision 0118). A refusal (acquired=false, 404, 409) is definitive. Any other failure is retried
// sooner than the regular period for as long as the lease is still valid locally. Either a refusal
// or a local lapse reports the loss, so the handler is aborted and its result withheld: past that
// point the server may already run a retry of the stage.
import { describe, isStatus, LeaseLostError } from './errors.js';
import type { LogFields, Logger } from './logger.js';
import type { StageLeaseResponse } from './protocol.js';

/** LeaseLostError.reason when the SDK's clock saw the lease run out without a renewal. */
export const LEASE_LAPSED = 'lapsed';

export interface LeaseKeeperOptions {
  /** Regular renewal period. */
  intervalMs: number;
  /** How long a grant lasts (the protocol's 60 s), counted from when its request was sent. */
  leaseMs: number;
  /** performance.now() when the request that granted the lease (pull, acquire, result) was sent. */
  grantSentAt: number;
  renew: () => Promise<StageLeaseResponse>;
  onLost: (error: LeaseLostError) => void;
  logger: Required<Logger>;
  /** Ids for log lines (stageId, executionId, attempt). */
  fields: LogFields;
}

export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private lapseTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failures = 0;
  /** On performance.now(): never later than the server's expiry, whatever the clocks say. */
  private expiresAt: number;
  private readonly lostAbort = new AbortController();

  constructor(private readonly options: LeaseKeeperOptions) {
    this.expiresAt = options.grantSentAt + options.leaseMs;
  }

  /** Why the lease was lost, or undefined while it is held. */
  get lost(): string | undefined {
    const reason = this.lostAbort.signal.reason as LeaseLostError | undefined;
    return reason?.reason;
  }

  /** Aborts, with the LeaseLostError, when the lease is lost. */
  get signal(): AbortSignal {
    return this.lostAbort.signal;
  }

  start(): void {
    this.armLapse();
    this.schedule(this.regularDelay());
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.lapseTimer);
    this.timer = undefined;
    this.lapseTimer = undefined;
  }

  private remaining(): number {
    return this.expiresAt - performance.now();
  }

  /**
   * The regular period, but within half of what is left: a lease counted from a long-polled pull
   * starts with less than the full duration, and its renewal must still get in well before the end.
   */
  private regularDelay(): number {
    return Math.max(1, Math.min(this.options.intervalMs, Math.floor(this.remaining() / 2)));
  }

  /** A tenth to a quarter of the period, jittered (2–5 s at the default 20 s). */
  private retryDelay(): number {
    const { intervalMs } = this.options;
    return Math.max(1, Math.round(intervalMs / 10 + (Math.random() * intervalMs * 3) / 20));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private armLapse(): void {
    clearTimeout(this.lapseTimer);
    if (this.stopped) return;
    // Timers count whole milliseconds on a coarser clock: check again rather than abort early.
    this.lapseTimer = setTimeout(
      () => (this.remaining() > 0 ? this.armLapse() : this.lose(LEASE_LAPSED)),
      Math.max(0, Math.ceil(this.remaining())),
    );
    this.lapseTimer.unref();
  }

  private async tick(): Promise<void> {
    const { logger, fields, leaseMs } = this.options;
    // The server extends from its own now, which comes after this moment: counting from here never
    // overshoots its expiry, and no clock of another machine is read.
    const sentAt = performance.now();
    try {
      const lease = await this.options.renew();
      if (this.stopped) return;
      if (!lease.acquired) {
        this.lose(lease.reason ?? 'refused');
        return;
      }
      this.expiresAt = Math.max(this.expiresAt, sentAt + leaseMs);
      this.armLapse();
      if (this.failures > 0)
        logger.info('lease renewed again', { ...fields, failures: this.failures });
      this.failures = 0;
      this.schedule(this.regularDelay());
    } catch (err) {
      if (this.stopped) return;
      const refusal = refusalOf(err);
      if (refusal !== undefined) {
        this.lose(refusal);
        return;
      }
      this.failures += 1;
      const delayMs = this.retryDelay();
      logger.warn('lease renewal failed; retrying while the lease lasts', {
        ...fields,
        failures: this.failures,
        delayMs,
        remainingMs: Math.max(0, Math.round(this.remaining())),
        error: describe(err),
      });
      this.schedule(delayMs);
    }
  }

  private lose(reason: string): void {
    if (this.lostAbort.signal.aborted) return;
    this.stop();
    const error = new LeaseLostError(reason);
    this.lostAbort.abort(error);
    this.options.logger.warn(
      reason === LEASE_LAPSED
        ? 'lease ran out without a renewal; aborting the handler'
        : 'lease renewal refused; aborting the handler',
      { ...this.options.fields, reason },
    );
    this.options.onLost(error);
  }
}

/** The reason of an answer that says the lease is no longer this worker's; undefined otherwise. */
function refusalOf(err: unknown): string | undefined {
  if (isStatus(err, 404)) return 'not_found';
  if (isStatus(err, 409)) return err.code ?? 'conflict';
  return undefined;
}
