import type { Engine } from '@po/engine';

export type PassOutcome = 'dispatched' | 'busy' | 'missing';

/**
 * One dispatcher pass over a pipeline (addendum §9) through the engine: doomed stages Skipped, ready
 * ones Pending with a new execution (or Throttled at the cap), due retries dispatched, the status
 * derived; messages published after commit. With skipLocked, 'busy' when another pass holds it.
 * `cause` is the traceparent of the event that asked for the pass (the dispatch spans link to it).
 */
export async function dispatchPipeline(
  deps: { engine: Engine },
  pipelineId: number,
  options: { skipLocked: boolean; cause?: string },
): Promise<PassOutcome> {
  const [outcome] = await deps.engine.run([{ kind: 'pass', pipelineId, cause: options.cause }], { skipLocked: options.skipLocked });
  return outcome?.kind === 'pass' ? 'dispatched' : options.skipLocked ? 'busy' : 'missing';
}
