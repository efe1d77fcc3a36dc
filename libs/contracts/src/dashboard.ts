// What the dashboard reads besides the resources of the spec (issue 13; decision 0093):
// GET /overview (throughput of the last hour, live pipelines, queue depth per handler) and
// GET /worker-events (the activity feed of the application's whole fleet).
import { arrayOf, enumOf, freeObject, int, MAX_ID, MAX_INT32, nullable, ref, response, str, utcDateTime } from './fragments.js';
import type { JsonObject } from './json.js';
import { limits } from './limits.js';
import { registerSchemas } from './validate.js';
import { WORKER_EVENT_KINDS, type WorkerEventKind } from './workers.js';
import { WORKER_ID_MAX_CHARS } from './worker-activity.js';

/** The overview's buckets: twelve of five minutes, the last one the current five minutes. */
export const OVERVIEW_BUCKET_SECONDS = 300;
export const OVERVIEW_BUCKETS = 12;

/** Statuses of pipelines not yet finished, which the overview counts. */
export const OVERVIEW_LIVE_STATUSES = ['NotStarted', 'Pending', 'Running', 'Paused'] as const;
export type OverviewLiveStatus = (typeof OVERVIEW_LIVE_STATUSES)[number];

export interface OverviewBucket {
  /** Start of the bucket; it holds what finished in [start, start + bucketSeconds). */
  start: string;
  stagesCompleted: number;
  stagesFailed: number;
  pipelinesCompleted: number;
  pipelinesFailed: number;
}

export interface OverviewQueue {
  handlerName: string;
  waiting: number;
  delayed: number;
  oldestWaitingAgeMs: number | null;
}

export interface Overview {
  from: string;
  to: string;
  bucketSeconds: number;
  buckets: OverviewBucket[];
  pipelinesByStatus: Record<OverviewLiveStatus, number>;
  queues: OverviewQueue[];
}

/** An item of GET /worker-events: a worker event and the worker it came from. */
export interface FleetWorkerEvent {
  id: number;
  workerId: string;
  workerName: string | null;
  kind: WorkerEventKind;
  at: string;
  message: string | null;
  stageId: number | null;
  pipelineId: number | null;
  data: JsonObject | null;
}

export interface FleetWorkerEventPage {
  items: FleetWorkerEvent[];
  nextCursor: string | null;
}

/** GET /ui/config.json: what the dashboard needs from the api-gateway's configuration. */
export interface DashboardConfig {
  /** A URL with `{traceId}` where it goes (DASHBOARD_TRACE_URL_TEMPLATE), or null: no trace links. */
  traceUrlTemplate: string | null;
  version: string;
}

const count = () => int(0, MAX_ID);

export const overviewBucketSchema = response('OverviewBucket', {
  start: utcDateTime(),
  stagesCompleted: count(),
  stagesFailed: count(),
  pipelinesCompleted: count(),
  pipelinesFailed: count(),
}, 'what finished in [start, start + bucketSeconds)');

export const overviewQueueSchema = response('OverviewQueue', {
  handlerName: str({ minLength: 1, maxLength: limits.stageHandlerNameChars }),
  waiting: { ...count(), description: 'messages of the queue no worker has pulled yet' },
  delayed: count(),
  oldestWaitingAgeMs: { ...nullable(int(0, MAX_ID)), description: 'milliseconds since the oldest waiting message was dispatched; null when none waits' },
}, 'the StageNext queue of one handler of the application');

export const overviewLiveCountsSchema = response(
  'OverviewLiveCounts',
  Object.fromEntries(OVERVIEW_LIVE_STATUSES.map((status) => [status, int(0, MAX_INT32)])),
  'pipelines of the application not yet finished, by status',
);

export const overviewSchema = response('Overview', {
  from: utcDateTime(),
  to: utcDateTime(),
  bucketSeconds: int(OVERVIEW_BUCKET_SECONDS, OVERVIEW_BUCKET_SECONDS),
  buckets: {
    ...arrayOf(ref('OverviewBucket'), { minItems: OVERVIEW_BUCKETS, maxItems: OVERVIEW_BUCKETS }),
    description: 'oldest first; the last bucket is the current five minutes, still filling',
  },
  pipelinesByStatus: ref('OverviewLiveCounts'),
  queues: {
    ...arrayOf(ref('OverviewQueue')),
    description: 'one per handler the application has stages of (at most 200, by name)',
  },
}, 'throughput and failures of the last hour, live pipelines by status, and queue depth per handler');

export const fleetWorkerEventSchema = response('FleetWorkerEvent', {
  id: { ...int(1, MAX_ID), description: 'increasing in the order the service recorded the events' },
  workerId: str({ minLength: 1, maxLength: WORKER_ID_MAX_CHARS }),
  workerName: nullable(str({ maxLength: limits.workerNameChars })),
  kind: enumOf(WORKER_EVENT_KINDS),
  at: utcDateTime(),
  message: nullable(str({ maxLength: limits.eventMessageChars })),
  stageId: nullable(int(1, MAX_ID)),
  pipelineId: nullable(int(1, MAX_ID)),
  data: nullable(freeObject()),
});

export const fleetWorkerEventPageSchema = response(
  'FleetWorkerEventPage',
  { items: arrayOf(ref('FleetWorkerEvent')), nextCursor: nullable(str({ minLength: 1 })) },
  'events of every worker of the application, newest first (id descending)',
);

registerSchemas(overviewBucketSchema, overviewQueueSchema, overviewLiveCountsSchema, overviewSchema, fleetWorkerEventSchema, fleetWorkerEventPageSchema);
