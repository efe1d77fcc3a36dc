// The API's shapes, from @po/client's generated OpenAPI types (type-only imports: nothing of the
// client is bundled). The dashboard additions of issue 13 are declared here as the dashboard
// contract states them, so the app builds whether or not the generated types have them yet.
import type {
  components,
  HandlerSettingsRequest,
  HandlerView,
  PipelinePage,
  PipelineResponse,
  PipelineStatus,
  PipelineSummary,
  ProblemDetails,
  Schedule as ClientSchedule,
  ScheduleBackfillResponse,
  ScheduleRun,
  ScheduleTriggerResponse,
  StageLog,
  StageResponse,
  StageStatus,
  WebhookCreated,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookView,
  WorkerEventRecord,
  WorkerSummary,
} from '@po/client';

export type {
  HandlerSettingsRequest,
  HandlerView,
  PipelinePage,
  PipelineResponse,
  PipelineStatus,
  PipelineSummary,
  ProblemDetails,
  ScheduleBackfillResponse,
  ScheduleRun,
  ScheduleTriggerResponse,
  StageLog,
  StageStatus,
  WebhookCreated,
  WebhookDeliveryList,
  WebhookDeliveryView,
  WebhookView,
  WorkerEventRecord,
  WorkerSummary,
};

export type ContextItem = components['schemas']['ContextItem'];

/**
 * A stage as the graph and the stages table read it: `workerId` is the lease holder, and the
 * attempt timings are those of the current execution. Optional, so an older server still fits.
 */
export type Stage = Omit<StageResponse, 'workerId' | 'attemptStartedAt' | 'attemptEndedAt'> & {
  workerId?: string | null;
  attemptStartedAt?: string | null;
  attemptEndedAt?: string | null;
};

/** A schedule with the next five fire instants (ISO 8601 UTC); older servers omit them. */
export type Schedule = Omit<ClientSchedule, 'nextRuns'> & { nextRuns?: string[] };

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** An item of GET /worker-events: a worker event of any worker of the application. */
export type FleetEvent = WorkerEventRecord & { workerId: string };

/** GET /overview: the last hour in 5-minute buckets, oldest first, and queue depth per handler. */
export interface Overview {
  from: string;
  to: string;
  bucketSeconds: number;
  buckets: OverviewBucket[];
  pipelinesByStatus: Partial<Record<PipelineStatus, number>>;
  queues: QueueDepth[];
}

export interface OverviewBucket {
  start: string;
  stagesCompleted: number;
  stagesFailed: number;
  pipelinesCompleted: number;
  pipelinesFailed: number;
}

export interface QueueDepth {
  handlerName: string;
  waiting: number;
  delayed: number;
  oldestWaitingAgeMs: number | null;
}

/** GET /ui/config.json, served by the api-gateway from its configuration. */
export interface UiConfig {
  traceUrlTemplate: string | null;
  version: string;
}

export const PIPELINE_STATUSES: readonly PipelineStatus[] = [
  'NotStarted',
  'Pending',
  'Running',
  'Paused',
  'Completed',
  'Failed',
  'Cancelled',
];
