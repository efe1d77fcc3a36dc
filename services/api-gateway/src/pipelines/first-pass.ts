import type { Queryable } from '@po/db';
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
  /**
   * True when no pass runs or waits here (decision 0106): this creation may then run its pass in
   * its own transaction, so the first stage is published before the creation commits instead of a
   * commit later. Until release() the process is not idle for other creations, which take the
   * batched way and share transactions.
   */
  claim(): boolean;
  /** Ends a claim, once the creation has committed or failed. */
  release(): void;
  /**
   * The pass of `pipelineId`, created in the open transaction `tx`, run in it. Resolves with what
   * to do once `tx` has committed; rejects when the pass failed (`tx` must then roll back).
   */
  within(tx: Queryable, pipelineId: number, cause: string | undefined): Promise<() => Promise<void>>;
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
  /** While no pass runs or waits, a creation runs its pass in its own transaction (decision 0106). */
  inCreation: boolean;
}

export const FIRST_PASS_DEFAULTS: FirstPassOptions = { maxBatch: 64, maxConcurrent: 2, maxWaiting: 1000, inCreation: true };

export function createFirstPasses(engine: Engine, logger: Logger, options: FirstPassOptions = FIRST_PASS_DEFAULTS): FirstPasses {
  const batcher = createPassRunner(engine, { maxBatch: options.maxBatch, maxConcurrent: options.maxConcurrent });
  // Creations running their pass in their own transaction (claimed and not yet released).
  let claimed = 0;
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
    claim() {
      if (!options.inCreation || options.maxWaiting === 0 || claimed > 0 || batcher.inFlight > 0 || batcher.backlog > 0) return false;
      claimed += 1;
      return true;
    },
    release() {
      claimed -= 1;
    },
    async within(tx, pipelineId, cause) {
      const { outcomes, committed } = await engine.runWithin(tx, [{ pipelineId, cause }]);
      if (outcomes[0]?.kind !== 'pass') throw new Error(`pipeline ${pipelineId}: no pass outcome`);
      return async () => {
        try {
          await committed();
        } catch (err) {
          // Metrics, spans, wake-ups and the publish (whose net is the sweep): the dispatch has committed.
          logger.warn({ err, pipelineId }, 'first pass: after-commit work failed');
        }
      };
    },
    drain: () => batcher.drain(),
  };
}

/** No pass in this process: every creation is announced to pipeline-service (tests of the gateway alone). */
export const announceOnly: FirstPasses = {
  start: () => false,
  claim: () => false,
  release: () => undefined,
  within: () => Promise.reject(new Error('no passes in this process')),
  drain: async () => undefined,
};
