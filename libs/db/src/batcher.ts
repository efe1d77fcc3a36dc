/**
 * Group commit: items submitted while the engine is busy are run together in the next batch, so a
 * burst costs a few transactions instead of one per item, and a lone item still runs at once.
 * A failing batch is split and its items run one by one, so one bad item fails only itself —
 * unless `split` says the failure is every item's (the database away), which splitting only repeats.
 */
export class Batcher<I, O> {
  private readonly waiting: { item: I; resolve: (o: O) => void; reject: (err: unknown) => void }[] = [];
  private running = 0;
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: {
      maxBatch: number;
      maxConcurrent: number;
      /** Whether a failed batch is run again item by item (default: always); false fails every item with it. */
      split?: (err: unknown) => boolean;
    },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.kick();
    });
  }

  /** Items submitted and not yet taken into a batch. */
  get backlog(): number {
    return this.waiting.length;
  }

  /** Batches being run now. */
  get inFlight(): number {
    return this.running;
  }

  /** Resolves once nothing is waiting or running (shutdown). */
  drain(): Promise<void> {
    if (this.running === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private kick(): void {
    while (this.running < this.options.maxConcurrent && this.waiting.length > 0) {
      const taken = this.waiting.splice(0, this.options.maxBatch);
      this.running += 1;
      void this.flush(taken).finally(() => {
        this.running -= 1;
        this.kick();
        if (this.running === 0 && this.waiting.length === 0) this.idle.splice(0).forEach((resolve) => resolve());
      });
    }
  }

  private async flush(taken: { item: I; resolve: (o: O) => void; reject: (err: unknown) => void }[]): Promise<void> {
    try {
      const outcomes = await this.run(taken.map((t) => t.item));
      taken.forEach((t, i) => t.resolve(outcomes[i]!));
    } catch (err) {
      if (taken.length === 1 || this.options.split?.(err) === false) {
        for (const t of taken) t.reject(err);
        return;
      }
      for (const t of taken) {
        try {
          const [outcome] = await this.run([t.item]);
          t.resolve(outcome!);
        } catch (itemErr) {
          t.reject(itemErr);
        }
      }
    }
  }
}
