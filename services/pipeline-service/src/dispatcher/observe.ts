import type { StageNextMessage } from '@po/contracts';
import {
  ATTR_APPLICATION_ID,
  ATTR_EXECUTION_ID,
  ATTR_PIPELINE_ID,
  ATTR_STAGE_HANDLER,
  ATTR_STAGE_ID,
  contextFromTraceparent,
  dispatchLatency,
  errorCodeLabels,
  handlerLabels,
  linksTo,
  recordStageSpan,
  retriesScheduled,
  stageContext,
  stageOutcomes,
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

/** Counts a stage outcome by handler (handler names are capped, decision 0052). */
export function recordOutcome(handler: string, outcome: 'failed' | 'retry_scheduled', errorCode: string): void {
  stageOutcomes().inc({ handler: handlerLabels.value(handler), outcome });
  if (outcome === 'retry_scheduled') retriesScheduled().inc({ error_code: errorCodeLabels.value(errorCode) });
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
