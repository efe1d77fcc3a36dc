export {
  ReplicasNotConfirmed,
  confirmReplicated,
  createRedis,
  isCluster,
  isRedisReady,
  pingRedis,
  singleRedis,
  type RedisConnection,
} from './connection.js';
export { keySlot } from './key-slot.js';
export {
  LEGACY_PIPELINE_EVENTS_QUEUE,
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
  STAGE_NEXT_BATCH_JOB,
  STAGE_NEXT_BATCH_MAX,
  STAGE_NEXT_JOB,
  createStageNextPublisher,
  stageNextBatchKeys,
  stageNextBullName,
  stageNextLimitChannel,
  stageNextWakeChannel,
  type StageNextBatchJob,
  type StageNextJob,
  type StageNextMessage,
  type StageNextPublisher,
  stageNextMessageBytes,
} from './stage-next.js';
export {
  FetchersExhausted,
  StageNextFetcher,
  type FetchedMessage,
  type StageNextFetcherOptions,
} from './stage-next-fetcher.js';
export { lostLock } from './fetched-message.js';
export { readStageNextDepths, type StageNextDepth } from './stage-next-depth.js';
export { setStageNextConcurrency, setStageNextPaused, stageNextQueueStates, type StageNextQueueState } from './stage-next-pause.js';
export { StageNextPlaces, stageNextPlaceKeys } from './stage-next-places.js';
export {
  createBacklogStats,
  toJobCounts,
  type BacklogSample,
  type BacklogStats,
  type QueueJobCounts,
} from './queue-backlog.js';
export {
  createStageNextQueueStats,
  type StageNextQueueSample,
  type StageNextQueueStats,
  type StageNextQueueStatsOptions,
} from './stage-next-stats.js';
export {
  DEAD_LETTER_REASONS,
  RESULTS_MAX_ATTEMPTS_DEFAULT,
  ResultDeadLettered,
  LEGACY_STAGE_RESULTS_QUEUE,
  STAGE_RESULTS_SHARDS,
  stageResultsQueue,
  stageResultsQueues,
  RESULT_GROUP_JOB,
  resultReceiptsKey,
  resultJobId,
  resultRetryDelay,
  stageResultMessageSchema,
  type DeadLetterReason,
  type ResultFailureClass,
  type StageResultMessage,
  type StageResultGroup,
} from './stage-results.js';
export {
  createStageResultsProducer,
  type StageResultsProducer,
  type StageResultsProducerOptions,
} from './stage-results-producer.js';
export {
  createStageResultsConsumer,
  type StageResultsConsumerOptions,
} from './stage-results-consumer.js';
export {
  createStageResultDeadLetters,
  type ResultDeadLetter,
  type StageResultDeadLetters,
} from './stage-results-dead-letters.js';
