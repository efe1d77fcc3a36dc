import { createPassRunner, type Engine } from '@po/engine';
import type { Logger } from '@po/telemetry';

/**
 * A new pipeline's first dispatcher pass, run in this process right after the creation commits
 * (decision 0102) instead of after a round trip through the pipeline-events queue and
 * pipeline-service: the same engine, the same transaction, one hop less between "ready" and
 * "published". The response does not wait for it; the creation already stored the request for a
 * pass (`dispatch_requested_at`), so pipeline-service's sweep runs it if this process dies first.
 */
export interface FirstPasses {
  /**
   * Starts the pass without waiting for it. False when too many passes wait already: the caller
   * hands the pipeline to pipeline-service instead (its `pipeline.created` event). `fallback` runs
   * when the pass itself fails.
   */
  start(pipelineId: number, cause: string | undefined, fallback: () => Promise<void>): boolean;
  /** Resolves once every started pass has ended (shutdown). */
  drain(): Promise<void>;
}

export interface FirstPassOptions {
  /** Pipelines per engine transaction. */
  maxBatch: number;
  /** Engine transactions at once. */
  maxConcurrent: number;
  /** Passes waiting for a transaction beyond which creations are handed to pipeline-service. */
  maxWaiting: number;
}

export const FIRST_PASS_DEFAULTS: FirstPassOptions = { maxBatch: 64, maxConcurrent: 2, maxWaiting: 1000 };

export function createFirstPasses(engine: Engine, logger: Logger, options: FirstPassOptions = FIRST_PASS_DEFAULTS): FirstPasses {
  const batcher = createPassRunner(engine, { maxBatch: options.maxBatch, maxConcurrent: options.maxConcurrent });
  return {
    start(pipelineId, cause, fallback) {
      if (batcher.backlog >= options.maxWaiting) return false;
      batcher.submit({ pipelineId, cause }).then(
        (outcome) => (outcome.kind === 'pass' ? undefined : fallback()),
        (err: unknown) => {
          logger.warn({ err, pipelineId }, 'first pass failed; pipeline-service takes the pipeline');
          return fallback();
        },
      ).catch((err: unknown) => logger.warn({ err, pipelineId }, 'pipeline not handed over; the sweep will run its pass'));
      return true;
    },
    drain: () => batcher.drain(),
  };
}

/** No pass in this process: every creation is announced to pipeline-service (tests of the gateway alone). */
export const announceOnly: FirstPasses = { start: () => false, drain: async () => undefined };
