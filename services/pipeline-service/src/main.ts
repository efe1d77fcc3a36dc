import './instrument.js';
import { loadConfig } from '@po/config';
import { createDb } from '@po/db';
import { listen, onShutdown } from '@po/http';
import {
  createPipelineEventsConsumer,
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageNextQueueStats,
  pingRedis,
} from '@po/queues';
import { createLogger, observeStageNextQueues, shutdownTracing } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import type { DispatcherDeps } from './dispatcher/deps.js';
import { startSweeper } from './dispatcher/sweeper.js';
import { createEventHandler } from './events/handle-event.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'pipeline-service', level: config.logLevel });
const db = createDb(config.databaseUrl, { max: Math.min(config.databasePoolMax, config.eventConcurrency + 4) });
const consumerRedis = createRedis(config.redisUrl, 'worker');
const producerRedis = createRedis(config.redisUrl, 'producer');
// GET /metrics reads depth and oldest age of the StageNext queues this process published to recently.
const queueStats = createStageNextQueueStats(producerRedis, config.queuePrefix);
observeStageNextQueues(() => queueStats.read());

const deps: DispatcherDeps = {
  db,
  publisher: createStageNextPublisher(producerRedis, config.queuePrefix, { onPublished: (queue) => queueStats.note(queue) }),
  events: createPipelineEventsProducer(producerRedis, config.queuePrefix),
  logger,
  clock: () => new Date(),
  random: Math.random,
  maxActiveStages: config.maxActiveStages,
};
const consumer = createPipelineEventsConsumer(consumerRedis, config.queuePrefix, createEventHandler(deps), {
  concurrency: config.eventConcurrency,
});
consumer.on('failed', (job, err) => logger.warn({ err, jobId: job?.id }, 'pipeline event failed'));
const sweeper = startSweeper(deps, { intervalMs: config.sweepIntervalMs, eventGraceMs: 1000 });

const app = buildApp(logger, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(producerRedis) });
const server = await listen(app, config.host, config.port);
logger.info({ port: server.port }, 'pipeline-service listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['event consumer', () => consumer.close()],
  ['sweeper', () => sweeper.stop()],
  ['producers', async () => Promise.all([deps.publisher.close(), deps.events.close(), queueStats.close()])],
  ['redis', async () => Promise.all([consumerRedis.quit(), producerRedis.quit()])],
  ['postgres', () => db.$disconnect()],
  ['telemetry', () => shutdownTracing()],
]);
