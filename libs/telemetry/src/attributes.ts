/**
 * Span attribute names of the product (low-cardinality ids only: never inputs, outputs, context
 * values, log lines or error messages). Metric label names live in metrics.ts.
 */
export const ATTR_PIPELINE_ID = 'pipeline.id';
export const ATTR_STAGE_ID = 'stage.id';
export const ATTR_STAGE_HANDLER = 'stage.handler';
export const ATTR_EXECUTION_ID = 'execution.id';
export const ATTR_APPLICATION_ID = 'application.id';
export const ATTR_SCHEDULE_NAME = 'schedule.name';
/** The stage attempt a lease granted, or a result claims. */
export const ATTR_STAGE_ATTEMPT = 'stage.attempt';
/** What a hop decided: a lease outcome (`granted` or the refusal reason), `applied` or the fencing reason. */
export const ATTR_OUTCOME = 'po.outcome';
/** The pipeline's own traceId when it is not a W3C trace id (the span's trace id is derived from it). */
export const ATTR_PIPELINE_TRACE_ID = 'pipeline.trace_id';
