import {
  ATTR_APPLICATION_ID,
  ATTR_EXECUTION_ID,
  ATTR_PIPELINE_ID,
  ATTR_STAGE_HANDLER,
  ATTR_STAGE_ID,
  SpanKind,
  activeSpan,
  stageContext,
  stageTraceparent,
  startSpan,
  traceparentOf,
  tracingEnabled,
} from '@po/telemetry';
import type { Delivery } from './deliveries.js';

/**
 * The traceparent a pulled delivery carries in its `headers` (decision 0051). With tracing on it is
 * the `stage.pull` span, a child of the stage's span (linked to the worker's pull request); with
 * tracing off it is the stage's span itself, so a worker with OpenTelemetry still joins the
 * pipeline's trace.
 */
export function pullTraceparent(delivery: Delivery): string {
  const m = delivery.payload;
  if (!tracingEnabled()) return stageTraceparent(m.traceId, m.spanId);
  const request = activeSpan()?.spanContext();
  const span = startSpan('stage.pull', {
    parent: stageContext(m.traceId, m.spanId),
    kind: SpanKind.CONSUMER,
    startTime: delivery.fetchStartedAt,
    links: request ? [{ context: request }] : undefined,
    attributes: {
      [ATTR_APPLICATION_ID]: m.applicationId,
      [ATTR_PIPELINE_ID]: m.pipelineId,
      [ATTR_STAGE_ID]: m.stageId,
      [ATTR_STAGE_HANDLER]: m.stageHandlerName,
      [ATTR_EXECUTION_ID]: m.executionId,
      'messaging.destination.name': delivery.queue,
    },
  });
  span.end();
  return traceparentOf(span);
}
