import { Batcher } from '@po/db';
import { Engine, type EngineDeps } from '@po/engine';
import type { StageResultMessage } from '@po/queues';
import { classifyFailure } from './failures.js';

export type ConsumerDeps = EngineDeps;

export interface ResultApplier {
  /** Applies one accepted result; resolves with whether it was applied (false: fenced, addendum §12). */
  apply(message: StageResultMessage): Promise<boolean>;
  /** Resolves once every submitted result was decided (shutdown). */
  drain(): Promise<void>;
}

/**
 * Applies accepted results (addendum §12, §13) through the engine: the results that arrive while a
 * batch is being written are applied together in the next one, with the dispatcher pass each of
 * their pipelines needs, in one transaction per batch (decision 0061). A batch that fails is
 * applied again result by result, so a result that cannot be applied fails alone and only its own
 * job spends an attempt (decision 0119) — unless the database is away, which fails them all alike.
 */
export function createResultApplier(deps: ConsumerDeps, options: { maxBatch: number; maxConcurrent: number }): ResultApplier {
  const engine = new Engine(deps);
  const batcher = new Batcher<StageResultMessage, boolean>(async (messages) => {
    const outcomes = await engine.run(messages.map((message) => ({ kind: 'result', pipelineId: message.pipelineId ?? 0, message })));
    return outcomes.map((o) => o.kind === 'result' && o.decision.applied);
  }, { ...options, split: (err) => classifyFailure(err) !== 'outage' });
  return { apply: (message) => batcher.submit(message), drain: () => batcher.drain() };
}
