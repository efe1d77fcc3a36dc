import { randomBytes } from 'node:crypto';

/**
 * Random W3C ids, except for the one span being started right now when the caller named its ids:
 * a pipeline's trace id is decided at creation (its `traceId`) and each stage's span id is stored
 * with the stage, so the spans that stand for them must carry exactly those ids. `Tracer.startSpan`
 * is synchronous, so setting the ids just before it and clearing them after is safe.
 */
export class PipelineIdGenerator {
  private traceId: string | undefined;
  private spanId: string | undefined;

  /** Runs `start` with the next trace id and/or span id fixed. */
  withIds<T>(ids: { traceId?: string; spanId?: string }, start: () => T): T {
    this.traceId = ids.traceId;
    this.spanId = ids.spanId;
    try {
      return start();
    } finally {
      this.traceId = undefined;
      this.spanId = undefined;
    }
  }

  generateTraceId(): string {
    const forced = this.traceId;
    this.traceId = undefined;
    return forced ?? nonZeroHex(16);
  }

  generateSpanId(): string {
    const forced = this.spanId;
    this.spanId = undefined;
    return forced ?? nonZeroHex(8);
  }
}

function nonZeroHex(bytes: number): string {
  for (;;) {
    const id = randomBytes(bytes).toString('hex');
    if (!/^0+$/.test(id)) return id;
  }
}
