import './instrument.js';
import { databaseOptions, describeRedis, loadConfig } from '@po/config';
import { createDb, poolSample } from '@po/db';
import { listen, listenMetrics, onShutdown } from '@po/http';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageNextQueueStats,
  createStageResultDeadLetters,
  pingRedis,
} from '@po/queues';
import { createLogger, observeDatabasePool, observeResultDeadLetters, observeStageNextQueues, shutdownTracing } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import { createResultApplier } from './consumer/apply-result.js';
import { consumeResults } from './consumer/consume.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'result-consumer', level: config.logLevel });
// Batches in flight, plus the statements beside them (marking published, resolving old messages).
const db = createDb(config.databaseUrl, { ...databaseOptions(config, 'result-consumer'), max: Math.min(config.databasePoolMax, config.batchConcurrency + 2) });
observeDatabasePool(() => poolSample(db));
const consumerRedis = createRedis(config.redis, 'worker');
const producerRedis = createRedis(config.redis, 'producer');

// The stages after a pipeline's first are published here, and only here: without this sampler a
// handler that never runs first would have no backlog gauge to alert or autoscale on (decision 0129).
const queueStats = createStageNextQueueStats(producerRedis, config.queuePrefix);
observeStageNextQueues(() => queueStats.read());
const publisher = createStageNextPublisher(producerRedis, config.queuePrefix, { onPublished: (queue) => queueStats.note(queue) });
const events = createPipelineEventsProducer(producerRedis, config.queuePrefix);
const applier = createResultApplier(
  { db, publisher, events, logger, random: Math.random, maxActiveStages: config.maxActiveStages },
  { maxBatch: config.batchSize, maxConcurrent: config.batchConcurrency },
);
const consumers = consumeResults(consumerRedis, config.queuePrefix, applier, logger, { concurrency: config.concurrency, maxAttempts: config.resultsMaxAttempts });
const deadLetters = createStageResultDeadLetters(producerRedis, config.queuePrefix);
observeResultDeadLetters(() => deadLetters.count());

const app = buildApp(logger, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(producerRedis) });
const server = await listen(app, config.host, config.port);
const metrics = await listenMetrics(config.host, config.metricsPort);
logger.info({ port: server.port, metricsPort: metrics.port, redis: describeRedis(config.redis) }, 'result-consumer listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['result consumers', async () => Promise.all(consumers.map((c) => c.close()))],
  ['batches', () => applier.drain()],
  ['producers', async () => Promise.all([publisher.close(), events.close(), deadLetters.close(), queueStats.close()])],
  ['redis', async () => Promise.all([consumerRedis.quit(), producerRedis.quit()])],
  ['postgres', () => db.$disconnect()],
  ['metrics server', () => metrics.close()],
  ['telemetry', () => shutdownTracing()],
]);
