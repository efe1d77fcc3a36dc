import { trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { ATTR_APPLICATION_ID, ATTR_PIPELINE_ID, ATTR_PIPELINE_TRACE_ID, ATTR_STAGE_HANDLER, ATTR_STAGE_ID } from './attributes.js';
import { otelTraceId } from './trace-ids.js';
import { activeSpan, startSpan, tracingEnabled } from './tracing.js';

/**
 * The spans that open a pipeline's trace (decision 0051). `pipeline.create` is a child of the
 * active span (the creation request) when that request is in the pipeline's trace, as it is when
 * the pipeline's traceId came from the request; otherwise it is the root of the pipeline's trace,
 * linked to the request's span. Undefined when tracing is off.
 */
export function startPipelineSpan(
  name: string,
  pipeline: { traceId: string; applicationId: number; id: number },
  startTime: number,
  attributes: Attributes = {},
): Span | undefined {
  if (!tracingEnabled()) return undefined;
  const traceId = otelTraceId(pipeline.traceId);
  const request = activeSpan()?.spanContext();
  const attrs: Attributes = { ...attributes, [ATTR_APPLICATION_ID]: pipeline.applicationId, [ATTR_PIPELINE_ID]: pipeline.id };
  if (traceId !== pipeline.traceId) attrs[ATTR_PIPELINE_TRACE_ID] = pipeline.traceId;
  if (request?.traceId === traceId) return startSpan(name, { startTime, attributes: attrs });
  return startSpan(name, { startTime, attributes: attrs, rootTraceId: traceId, links: request ? [{ context: request }] : undefined });
}

/**
 * The stage's own span, with the spanId stored at creation: recorded once, when the stage is first
 * dispatched (so stages appended later and scheduled pipelines get theirs too), as a child of the
 * span that caused the dispatch (`cause`: the creation, or the applied result of the stage before)
 * when that is in the pipeline's trace. It ends at once: it stands for the stage, and every later
 * hop — dispatch, pull, lease, handler, result, apply, retries — is its child.
 */
export function recordStageSpan(
  stage: { pipelineTraceId: string; spanId: string; id: number; handler: string; pipelineId: number; applicationId: number },
  cause: Context | undefined,
  startTime: number,
): void {
  const traceId = otelTraceId(stage.pipelineTraceId);
  const causeSpan = cause ? trace.getSpanContext(cause) : undefined;
  const attributes: Attributes = {
    [ATTR_APPLICATION_ID]: stage.applicationId,
    [ATTR_PIPELINE_ID]: stage.pipelineId,
    [ATTR_STAGE_ID]: stage.id,
    [ATTR_STAGE_HANDLER]: stage.handler,
  };
  const options =
    cause && causeSpan?.traceId === traceId
      ? { parent: cause }
      : { rootTraceId: traceId, links: causeSpan && trace.isSpanContextValid(causeSpan) ? [{ context: causeSpan }] : undefined };
  startSpan('pipeline.stage', { ...options, spanId: stage.spanId, startTime, attributes }).end();
}
