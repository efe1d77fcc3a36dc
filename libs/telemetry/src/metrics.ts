import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics (prom-client, decision 0052), served as text at GET /metrics by every service.
 * Each metric is created on first use, so a service exposes only the metrics of its own work;
 * the full list with meanings is docs/observability.md. Labels are low-cardinality: no pipeline,
 * stage, execution or worker ids; user-defined names (handlers, queues, error codes) pass through
 * a LabelCap.
 */
export const metricsRegistry = new Registry();
export const registers = [metricsRegistry];

export function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

/** The label value every name past a cap is counted under. */
export const OTHER_LABEL = '_other';

/**
 * Bounds a user-defined label (handler names, error codes, queue names): the first `max` distinct
 * values seen by this process are kept as they are, every later one becomes `_other`. Values are
 * cut to 100 characters. Deterministic per process, readable, and bounded (decision 0052).
 */
export class LabelCap {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}

  value(raw: string): string {
    const value = raw.length > 100 ? raw.slice(0, 100) : raw;
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(value);
    return value;
  }
}

/** Shared caps: one set of handler names and queue names per process. */
export const handlerLabels = new LabelCap(200);
export const queueLabels = new LabelCap(500);
export const errorCodeLabels = new LabelCap(100);

const FAST = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WAIT = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30];
/** Hand-offs between services: milliseconds normally, minutes when workers or a database are away. */
const HANDOFF = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

/** Node.js process metrics (CPU, memory, event loop lag, GC), prom-client's defaults. */
export const enableProcessMetrics = once(() => collectDefaultMetrics({ register: metricsRegistry }));

export const httpRequestDuration = once(
  () =>
    new Histogram({
      name: 'po_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status; _count is the request count.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: FAST,
      registers,
    }),
);

export const dispatchLatency = once(
  () =>
    new Histogram({
      name: 'po_dispatch_latency_seconds',
      help: 'From the change that made a stage ready (dispatch requested) to its StageNext message confirmed by Redis.',
      buckets: FAST,
      registers,
    }),
);

export const stagesDispatched = once(
  () => new Counter({ name: 'po_stages_dispatched_total', help: 'StageNext messages published by dispatcher passes (one per new execution).', registers }),
);

export const pullWait = once(
  () =>
    new Histogram({
      name: 'po_pull_wait_seconds',
      help: 'How long a POST /jobs/pull waited; result=message (a delivery) or empty (204).',
      labelNames: ['result'] as const,
      buckets: WAIT,
      registers,
    }),
);

export const pickupLatency = once(
  () =>
    new Histogram({
      name: 'po_pickup_latency_seconds',
      help: 'From a StageNext message published (its dispatchedAt: the stage ready in its queue) to its delivery by POST /jobs/pull; a redelivery counts from the same dispatch.',
      buckets: HANDOFF,
      registers,
    }),
);

export const leaseDecisions = once(
  () =>
    new Counter({
      name: 'po_lease_decisions_total',
      help: 'Lease acquire/renew calls by outcome: granted, or the refusal reason.',
      labelNames: ['operation', 'outcome'] as const,
      registers,
    }),
);

export const leaseSlowPaths = once(
  () =>
    new Counter({
      name: 'po_lease_slow_paths_total',
      help: 'Lease acquire/renew calls that the compare-and-set statement did not grant, decided by the slow path (a transaction reading why).',
      labelNames: ['operation'] as const,
      registers,
    }),
);

export const resultsAccepted = once(
  () => new Counter({ name: 'po_results_accepted_total', help: 'Worker results accepted by the worker-gateway (202: confirmed on stage-results).', registers }),
);

export const resultsApplied = once(
  () => new Counter({ name: 'po_results_applied_total', help: 'Results applied by the result-consumer.', registers }),
);

export const resultApplyLatency = once(
  () =>
    new Histogram({
      name: 'po_result_apply_latency_seconds',
      help: 'From a result accepted by the worker-gateway (202, its receivedAt) to its application by the result-consumer committed; fenced results are not observed.',
      buckets: HANDOFF,
      registers,
    }),
);

export const resultsFenced = once(
  () =>
    new Counter({
      name: 'po_results_fenced_total',
      help: 'Results discarded by fencing (stale execution or attempt, stage not Running, pipeline ended, not the lease holder), by reason.',
      labelNames: ['reason'] as const,
      registers,
    }),
);

export const resultsDeadLettered = once(
  () =>
    new Counter({
      name: 'po_results_dead_lettered_total',
      help: 'Results the result-consumer gave up on (kept in the stage-results failed set for replay), by reason class: invalid_message, contention, error.',
      labelNames: ['reason'] as const,
      registers,
    }),
);

export const retriesScheduled = once(
  () =>
    new Counter({
      name: 'po_retries_scheduled_total',
      help: 'Failures that scheduled a retry, by error code (capped: rare codes become _other).',
      labelNames: ['error_code'] as const,
      registers,
    }),
);

export const stageOutcomes = once(
  () =>
    new Counter({
      name: 'po_stage_outcomes_total',
      help: 'Stage execution outcomes by handler (capped): completed, failed, retry_scheduled, waiting_for_approval.',
      labelNames: ['handler', 'outcome'] as const,
      registers,
    }),
);

export const visibilityRequeues = once(
  () =>
    new Counter({
      name: 'po_visibility_timeout_requeues_total',
      help: 'Deliveries returned to their queue because they were not acknowledged within the visibility timeout.',
      registers,
    }),
);

export const scheduleTickLag = once(
  () =>
    new Histogram({
      name: 'po_schedule_tick_lag_seconds',
      help: 'How late a scheduled tick fired: fire time minus the tick time.',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    }),
);

export const scheduleRuns = once(
  () =>
    new Counter({
      name: 'po_schedule_runs_total',
      help: 'Schedule ticks handled, by outcome (created, failed, skipped, queued, already_fired) plus promoted queued runs.',
      labelNames: ['status'] as const,
      registers,
    }),
);

export const retentionDeleted = once(
  () =>
    new Counter({
      name: 'po_retention_deleted_rows_total',
      help: 'Rows the retention cleanup deleted, by family (its RETENTION_*_DAYS setting) and table.',
      labelNames: ['family', 'table'] as const,
      registers,
    }),
);

/** The Prometheus text exposition of this process. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}
