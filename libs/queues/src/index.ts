export { createRedis, pingRedis } from './connection.js';
export {
  PIPELINE_EVENTS_QUEUE,
  createPipelineEventsConsumer,
  createPipelineEventsProducer,
  pipelineEventSchema,
  type PipelineEvent,
  type PipelineEventType,
  type PipelineEventsProducer,
} from './pipeline-events.js';
