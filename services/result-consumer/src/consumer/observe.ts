import type { ExecutionState } from '@po/db';
import type { StageResultMessage } from '@po/queues';
import {
  ATTR_APPLICATION_ID,
  ATTR_EXECUTION_ID,
  ATTR_OUTCOME,
  ATTR_PIPELINE_ID,
  ATTR_STAGE_ATTEMPT,
  ATTR_STAGE_HANDLER,
  ATTR_STAGE_ID,
  SpanKind,
  contextFromTraceparent,
  errorCodeLabels,
  handlerLabels,
  markFailed,
  resultsApplied,
  resultsFenced,
  retriesScheduled,
  stageOutcomes,
  stageParent,
  startSpan,
  tracingEnabled,
  type Span,
} from '@po/telemetry';

export type StageOutcome = 'completed' | 'failed' | 'retry_scheduled' | 'waiting_for_approval';

/** What an application of one result decided: applied with the stage's outcome, or fenced (or the stage unknown). */
export type ApplyDecision = { applied: true; outcome: StageOutcome; errorCode: string | null } | { applied: false; reason: string };

/**
 * Counts the decision (results applied or fenced by reason; stage outcomes by handler; retries by
 * error code) and, with tracing on, records the `stage.apply` span: a child of the worker-gateway's
 * result span that travelled with the message, or of the stage's own span when there is none.
 * Returns the span (still open: its traceparent goes on the result.applied event).
 */
export function recordApply(message: StageResultMessage, state: ExecutionState | undefined, decision: ApplyDecision, startTime: number): Span | undefined {
  if (decision.applied) {
    resultsApplied().inc();
    const handler = handlerLabels.value(state?.stage.handlerName ?? 'unknown');
    stageOutcomes().labels(handler, decision.outcome).inc();
    if (decision.outcome === 'retry_scheduled') retriesScheduled().labels(errorCodeLabels.value(decision.errorCode ?? 'none')).inc();
  } else {
    resultsFenced().labels(decision.reason).inc();
  }
  if (!state || !tracingEnabled()) return undefined;
  const { parent, links } = stageParent(state.pipelineTraceId, state.stage.spanId, contextFromTraceparent(message.traceparent));
  const span = startSpan('stage.apply', {
    parent,
    links,
    startTime,
    kind: SpanKind.CONSUMER,
    attributes: {
      [ATTR_APPLICATION_ID]: message.applicationId,
      [ATTR_PIPELINE_ID]: state.stage.pipelineId,
      [ATTR_STAGE_ID]: state.stage.id,
      [ATTR_STAGE_HANDLER]: state.stage.handlerName,
      [ATTR_EXECUTION_ID]: message.result.executionId,
      [ATTR_STAGE_ATTEMPT]: message.result.attempt,
      [ATTR_OUTCOME]: decision.applied ? decision.outcome : decision.reason,
    },
  });
  if (decision.applied && decision.outcome !== 'completed' && decision.outcome !== 'waiting_for_approval') markFailed(span, 'stage_failed');
  return span;
}
