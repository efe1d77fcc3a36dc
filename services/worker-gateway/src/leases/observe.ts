import type { ExecutionState } from '@po/db';
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

/**
 * Counts a lease decision (granted, or the refusal reason) and, with tracing on, records the
 * `stage.lease` span: under the worker's request span when that is in the pipeline's trace (the SDK
 * sends the delivery's traceparent), otherwise under the stage's own span.
 */
export function recordLease(
  operation: 'acquire' | 'renew',
  response: { acquired: boolean; attempt: number | null; reason: string | null },
  state: ExecutionState | undefined,
  executionId: string,
  startTime: number,
): void {
  const outcome = response.acquired ? 'granted' : (response.reason ?? 'refused');
  leaseDecisions().labels(operation, outcome).inc();
  if (!state || !tracingEnabled()) return;
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
