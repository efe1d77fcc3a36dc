import { pipelineTraceId, type Db } from '@po/db';
import {
  ATTR_APPLICATION_ID,
  ATTR_EXECUTION_ID,
  ATTR_PIPELINE_ID,
  ATTR_STAGE_ATTEMPT,
  ATTR_STAGE_ID,
  SpanKind,
  activeContext,
  stageParent,
  startSpan,
  tracingEnabled,
  type Span,
} from '@po/telemetry';

/**
 * The `stage.result` span (tracing on only), started before the result is published so its
 * traceparent travels on stage-results to the apply span: under the worker's request span when
 * that is in the pipeline's trace (the SDK sends its handler span), otherwise under the stage's span.
 */
export async function startResultSpan(
  db: Db,
  stage: { pipelineId: number; spanId: string; applicationId: number },
  result: { stageId: number; executionId: string; attempt: number },
  startTime: number,
): Promise<Span | undefined> {
  if (!tracingEnabled()) return undefined;
  const traceId = await pipelineTraceId(db, stage.pipelineId);
  if (traceId === null) return undefined;
  const { parent, links } = stageParent(traceId, stage.spanId, activeContext());
  return startSpan('stage.result', {
    parent,
    links,
    startTime,
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTR_APPLICATION_ID]: stage.applicationId,
      [ATTR_PIPELINE_ID]: stage.pipelineId,
      [ATTR_STAGE_ID]: result.stageId,
      [ATTR_EXECUTION_ID]: result.executionId,
      [ATTR_STAGE_ATTEMPT]: result.attempt,
    },
  });
}
