export { createLogger, type Logger } from './logger.js';
export { startTelemetry } from './setup.js';
export { MAX_SENSITIVE_VALUES, MIN_SENSITIVE_CHARS, forgetSensitive, redactLine, rememberSensitive, rememberSensitiveItems } from './redaction.js';
export * from './attributes.js';
export { formatTraceparent, isSpanId, isTraceId, otelTraceId, parseTraceparent, type TraceparentParts } from './trace-ids.js';
export { tracingSettings, type TracingSettings, type TraceExporterName, type SamplerName } from './settings.js';
export {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  activeContext,
  activeSpan,
  contextFromTraceparent,
  linksTo,
  markFailed,
  shutdownTracing,
  stageContext,
  stageParent,
  stageTraceparent,
  startSpan,
  startTracing,
  traceparentOf,
  tracingEnabled,
  withSpan,
  withTraceparent,
  type Context,
  type Span,
  type SpanOptions,
} from './tracing.js';
export type { SpanLine } from './file-exporter.js';
export { recordStageSpan, startPipelineSpan } from './pipeline-spans.js';
export {
  LabelCap,
  OTHER_LABEL,
  dispatchLatency,
  enableProcessMetrics,
  errorCodeLabels,
  handlerLabels,
  httpRequestDuration,
  leaseDecisions,
  leaseSlowPaths,
  metricsRegistry,
  metricsText,
  pickupLatency,
  pullWait,
  queueLabels,
  resultApplyLatency,
  resultsAccepted,
  resultsApplied,
  resultsDeadLettered,
  resultsFenced,
  retentionDeleted,
  retriesScheduled,
  scheduleRuns,
  scheduleTickLag,
  stageOutcomes,
  stagesDispatched,
  visibilityRequeues,
} from './metrics.js';
export {
  observeDatabasePool,
  observeDeliveriesInflight,
  observeInternalQueues,
  observeResultDeadLetters,
  observeStageNextQueues,
  observeWorkers,
  type DatabasePoolSample,
  type InternalQueuesSample,
  type JobCountsSample,
  type QueueSample,
  type WorkerSample,
} from './gauges.js';
