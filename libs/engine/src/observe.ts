import type { StageNextMessage } from '@po/contracts';
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
  dispatchLatency,
  errorCodeLabels,
  handlerLabels,
  linksTo,
  markFailed,
  recordStageSpan,
  resultApplyLatency,
  resultsApplied,
  resultsFenced,
  retriesScheduled,
  stageContext,
  stageOutcomes,
  stageParent,
  stagesDispatched,
  startSpan,
  tracingEnabled,
  type Span,
} from '@po/telemetry';

/**
 * Spans of a pass's dispatches, started before the publish (tracing on only): each stage's own span
 * when this is its first dispatch (a child of the span that caused the pass: the creation, or the
 * previous stage's applied result), then `stage.dispatch` under the stage's span, linked to that
 * cause. Undefined when tracing is off.
 */
export function startDispatchSpans(
  outgoing: readonly { message: StageNextMessage }[],
  pipelineTraceId: string,
  cause: string | undefined,
  startTime: number,
): Map<string, Span> | undefined {
  if (!tracingEnabled() || outgoing.length === 0) return undefined;
  const causeContext = contextFromTraceparent(cause);
  const links = linksTo(cause);
  const spans = new Map<string, Span>();
  for (const { message: m } of outgoing) {
    if (m.previousAttempts === 0) {
      recordStageSpan(
        { pipelineTraceId, spanId: m.spanId, id: m.stageId, handler: m.stageHandlerName, pipelineId: m.pipelineId, applicationId: m.applicationId },
        causeContext,
        startTime,
      );
    }
    const span = startSpan('stage.dispatch', {
      parent: stageContext(pipelineTraceId, m.spanId),
      startTime,
      links,
      attributes: {
        [ATTR_APPLICATION_ID]: m.applicationId,
        [ATTR_PIPELINE_ID]: m.pipelineId,
        [ATTR_STAGE_ID]: m.stageId,
        [ATTR_STAGE_HANDLER]: m.stageHandlerName,
        [ATTR_EXECUTION_ID]: m.executionId,
      },
    });
    spans.set(m.executionId, span);
  }
  return spans;
}

export type StageOutcome = 'completed' | 'failed' | 'retry_scheduled' | 'waiting_for_approval';

/** What applying one result decided: applied with the stage's outcome, or fenced (or the stage unknown). */
export type ApplyDecision = { applied: true; outcome: StageOutcome; errorCode: string | null } | { applied: false; reason: string };

/** Counts a stage outcome by handler (handler names are capped, decision 0052), and retries by error code. */
export function recordOutcome(handler: string, outcome: StageOutcome, errorCode: string | null): void {
  stageOutcomes().inc({ handler: handlerLabels.value(handler), outcome });
  if (outcome === 'retry_scheduled') retriesScheduled().inc({ error_code: errorCodeLabels.value(errorCode ?? 'none') });
}

/** The stage a result was applied to, as the apply span needs it. */
export interface AppliedStage {
  id: number;
  pipelineId: number;
  handlerName: string;
  spanId: string;
  pipelineTraceId: string;
}

/**
 * Counts the decision (results applied, with their latency from acceptance, or fenced by reason;
 * stage outcomes by handler; retries by error code) and, with tracing on, records the
 * `stage.apply` span: a child of the worker-gateway's result span that travelled with the
 * message, or of the stage's own span when there is none.
 * Returns the span (still open: the dispatch its result causes links to it).
 */
export function recordApply(message: StageResultMessage, stage: AppliedStage | undefined, decision: ApplyDecision, startTime: number): Span | undefined {
  if (decision.applied) {
    resultsApplied().inc();
    // receivedAt is the worker-gateway's clock: a small skew must not record a negative latency.
    const receivedAt = Date.parse(message.receivedAt);
    if (Number.isFinite(receivedAt)) resultApplyLatency().observe(Math.max(0, Date.now() - receivedAt) / 1000);
    recordOutcome(stage?.handlerName ?? 'unknown', decision.outcome, decision.errorCode);
  } else {
    resultsFenced().labels(decision.reason).inc();
  }
  if (!stage || !tracingEnabled()) return undefined;
  const { parent, links } = stageParent(stage.pipelineTraceId, stage.spanId, contextFromTraceparent(message.traceparent));
  const span = startSpan('stage.apply', {
    parent,
    links,
    startTime,
    kind: SpanKind.CONSUMER,
    attributes: {
      [ATTR_APPLICATION_ID]: message.applicationId,
      [ATTR_PIPELINE_ID]: stage.pipelineId,
      [ATTR_STAGE_ID]: stage.id,
      [ATTR_STAGE_HANDLER]: stage.handlerName,
      [ATTR_EXECUTION_ID]: message.result.executionId,
      [ATTR_STAGE_ATTEMPT]: message.result.attempt,
      [ATTR_OUTCOME]: decision.applied ? decision.outcome : decision.reason,
    },
  });
  if (decision.applied && decision.outcome !== 'completed' && decision.outcome !== 'waiting_for_approval') markFailed(span, 'stage_failed');
  return span;
}

/**
 * A queue's messages were confirmed by Redis: counts them, observes the dispatch latency (from the
 * moment the pass was requested, i.e. the change that made the stages ready) and ends their spans.
 */
export function recordPublished(messages: readonly StageNextMessage[], requestedAt: Date | null, spans: Map<string, Span> | undefined): void {
  stagesDispatched().inc(messages.length);
  if (requestedAt) {
    const seconds = Math.max(0, (Date.now() - requestedAt.getTime()) / 1000);
    for (let i = 0; i < messages.length; i += 1) dispatchLatency().observe(seconds);
  }
  if (spans) for (const m of messages) spans.get(m.executionId)?.end();
}
