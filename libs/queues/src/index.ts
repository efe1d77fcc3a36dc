export { createRedis, pingRedis } from './connection.js';
export {
  PIPELINE_EVENTS_QUEUE,
  PIPELINE_EVENT_TYPES,
  createPipelineEventsConsumer,
  createPipelineEventsProducer,
  pipelineEventSchema,
  type PipelineEvent,
  type PipelineEventType,
  type PipelineEventsProducer,
} from './pipeline-events.js';
export {
  StageNextFetcher,
  createStageNextPublisher,
  stageNextWakeChannel,
  type FetchedMessage,
  type StageNextFetcherOptions,
  type StageNextMessage,
  type StageNextPublisher,
} from './stage-next.js';
export {
  createStageNextQueueStats,
  type StageNextQueueSample,
  type StageNextQueueStats,
  type StageNextQueueStatsOptions,
} from './stage-next-stats.js';
export {
  STAGE_RESULTS_QUEUE,
  createStageResultsConsumer,
  createStageResultsProducer,
  resultJobId,
  resultRetryDelay,
  stageResultMessageSchema,
  type StageResultMessage,
  type StageResultsProducer,
} from './stage-results.js';
