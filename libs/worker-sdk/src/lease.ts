// Background lease renewal for one execution. A refusal (acquired=false) is definitive: the
// keeper stops and reports the loss so the handler can be aborted and its result withheld.
import { describe, isStatus } from './errors.js';
import type { LogFields, Logger } from './logger.js';
import type { StageLeaseResponse } from './protocol.js';

export interface LeaseKeeperOptions {
  intervalMs: number;
  renew: () => Promise<StageLeaseResponse>;
  onLost: (reason: string) => void;
  logger: Required<Logger>;
  /** Ids for log lines (stageId, executionId, attempt). */
  fields: LogFields;
}

export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lostReason: string | undefined;
  private failures = 0;

  constructor(private readonly options: LeaseKeeperOptions) {}

  /** Why the lease was lost, or undefined while it is held. */
  get lost(): string | undefined {
    return this.lostReason;
  }

  start(): void {
    this.schedule(this.options.intervalMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const { logger, fields, intervalMs } = this.options;
    try {
      const lease = await this.options.renew();
      if (this.stopped) return;
      if (lease.acquired) {
        if (this.failures > 0) logger.info('lease renewed again', fields);
        this.failures = 0;
        this.schedule(intervalMs);
      } else {
        this.lose(lease.reason ?? 'refused');
      }
    } catch (err) {
      if (this.stopped) return;
      if (isStatus(err, 404)) {
        this.lose('not_found');
        return;
      }
      this.failures += 1;
      logger.warn('lease renewal failed; retrying', {
        ...fields,
        failures: this.failures,
        error: describe(err),
      });
      // The lease lasts 60 s: try again sooner than the regular period.
      this.schedule(Math.max(1, Math.floor(intervalMs / 2)));
    }
  }

  private lose(reason: string): void {
    this.lostReason = reason;
    this.stop();
    this.options.logger.warn('lease renewal refused; aborting the handler', {
      ...this.options.fields,
      reason,
    });
    this.options.onLost(reason);
  }
}
