import { sqlOf, stageTraceFacts, type Db } from '@po/db';
import {
  ATTR_APPLICATION_ID,
  ATTR_EXECUTION_ID,
  ATTR_OUTCOME,
  ATTR_PIPELINE_ID,
  ATTR_STAGE_ATTEMPT,
  ATTR_STAGE_HANDLER,
  ATTR_STAGE_ID,
  activeContext,
  leaseDecisions,
  stageParent,
  startSpan,
  tracingEnabled,
} from '@po/telemetry';

/** What the lease span needs of the stage. */
export interface StageFacts {
  pipelineTraceId: string;
  stage: { id: number; pipelineId: number; applicationId: number; handlerName: string; spanId: string };
}

/**
 * Counts a lease decision (granted, or the refusal reason) and, with tracing on, records the
 * `stage.lease` span: under the worker's request span when that is in the pipeline's trace (the SDK
 * sends the delivery's traceparent), otherwise under the stage's own span.
 */
export async function recordLease(
  operation: 'acquire' | 'renew',
  response: { acquired: boolean; attempt: number | null; reason: string | null },
  seen: StageFacts | undefined,
  executionId: string,
  startTime: number,
  db: Db,
  stageId: number,
): Promise<void> {
  const outcome = response.acquired ? 'granted' : (response.reason ?? 'refused');
  leaseDecisions().labels(operation, outcome).inc();
  if (!tracingEnabled()) return;
  // The hot statement reads no stage facts: with tracing on, the span's parent is read here.
  const state = seen ?? (await stageTraceFacts(sqlOf(db), stageId));
  if (!state) return;
  const { parent, links } = stageParent(state.pipelineTraceId, state.stage.spanId, activeContext());
  const span = startSpan('stage.lease', {
    parent,
    links,
    startTime,
    attributes: {
      'lease.operation': operation,
      [ATTR_OUTCOME]: outcome,
      [ATTR_APPLICATION_ID]: state.stage.applicationId,
      [ATTR_PIPELINE_ID]: state.stage.pipelineId,
      [ATTR_STAGE_ID]: state.stage.id,
      [ATTR_STAGE_HANDLER]: state.stage.handlerName,
      [ATTR_EXECUTION_ID]: executionId,
    },
  });
  if (response.attempt !== null) span.setAttribute(ATTR_STAGE_ATTEMPT, response.attempt);
  span.end();
}
