// Friendly names for the generated schema types.
import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];

export type PipelineDefinition = Schemas['PipelineDefinition'];
export type IdempotentPipelineCreateRequest = Schemas['IdempotentPipelineCreateRequest'];
export type IdempotentPipelineCreateResponse = Schemas['IdempotentPipelineCreateResponse'];
export type PipelineResponse = Schemas['PipelineResponse'];
export type StageResponse = Schemas['StageResponse'];
export type StageCreate = Schemas['StageCreate'];
export type StageInfo = Schemas['StageInfo'];
export type StageDto = Schemas['StageDto'];
export type StageLog = Schemas['StageLog'];
export type ResumeStageRequest = Schemas['ResumeStageRequest'];
export type PipelineStatus = PipelineResponse['status'];
export type StageStatus = NonNullable<StageResponse['status']>;
export type Schedule = Schemas['Schedule'];
export type ScheduleStatus = Schedule['status'];
export type ScheduleUpsertRequest = Schemas['ScheduleUpsertRequest'];
export type ScheduleRun = Schemas['ScheduleRun'];
export type ScheduleBackfillRequest = Schemas['ScheduleBackfillRequest'];
export type ScheduleBackfillResponse = Schemas['ScheduleBackfillResponse'];
export type ScheduleTriggerRequest = Schemas['ScheduleTriggerRequest'];
export type ScheduleTriggerResponse = Schemas['ScheduleTriggerResponse'];
export type HandlerView = Schemas['HandlerView'];
export type HandlerSettingsRequest = Schemas['HandlerSettingsRequest'];
export type RerunRequest = Schemas['RerunRequest'];
export type BulkFilter = Schemas['BulkFilter'];
export type BulkRerunRequest = Schemas['BulkRerunRequest'];
export type BulkCancelRequest = Schemas['BulkCancelRequest'];
export type BulkDryRun = Schemas['BulkDryRun'];
export type OperationView = Schemas['OperationView'];
export type WebhookRequest = Schemas['WebhookRequest'];
export type WebhookView = Schemas['WebhookView'];
export type WebhookCreated = Schemas['WebhookCreated'];
export type WebhookDeliveryView = Schemas['WebhookDeliveryView'];
export type WebhookDeliveryList = Schemas['WebhookDeliveryList'];
export type WebhookEvent = WebhookRequest['events'][number];
export type WorkerSummary = Schemas['WorkerSummary'];
export type WorkerEventRecord = Schemas['WorkerEventRecord'];
export type VersionInfo = Schemas['VersionInfo'];

/** Pipeline statuses that end a pipeline (api-spec.md). */
export const TERMINAL_PIPELINE_STATUSES: readonly PipelineStatus[] = [
  'Completed',
  'Failed',
  'Cancelled',
];
export const PIPELINE_STATUSES: readonly PipelineStatus[] = [
  'NotStarted',
  'Pending',
  'Running',
  'Paused',
  'Completed',
  'Failed',
  'Cancelled',
];

/** Filters and paging of GET /pipelines (`status` and `keyword` repeat; `name` is a prefix). */
export type PipelineListQuery = NonNullable<operations['listPipelines']['parameters']['query']>;
/** An item of GET /pipelines: no stages, context or keywords; stage counts per status. */
export type PipelineSummary = Schemas['PipelineSummary'];
export type PipelinePage = Schemas['PipelinePage'];

/** Each event a webhook can take (decision 0134); keyed by the API's enum, so none can be missing. */
const WEBHOOK_EVENT_SET: Record<WebhookEvent, true> = {
  'pipeline.completed': true,
  'pipeline.failed': true,
  'pipeline.cancelled': true,
  'stage.failed': true,
  'stage.waiting_for_approval': true,
  'schedule.run_missed': true,
};

/** The events a webhook can take, in the API's order. */
export const WEBHOOK_EVENTS = Object.keys(WEBHOOK_EVENT_SET) as readonly WebhookEvent[];

