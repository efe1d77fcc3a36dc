import './instrument.js';
import { databaseOptions, describeRedis, loadConfig } from '@po/config';
import { createDb, poolSample, sqlOf } from '@po/db';
import { Engine, createPassRunner } from '@po/engine';
import { listen, listenMetrics, onShutdown } from '@po/http';
import {
  createBacklogStats,
  createPipelineEventsConsumer,
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageNextQueueStats,
  createStageResultsProducer,
  pingRedis,
  setStageNextConcurrency,
  setStageNextPaused,
  stageNextQueueStates,
} from '@po/queues';
import { createLogger, observeDatabasePool, observeInternalQueues, observeStageNextQueues, shutdownTracing } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import type { DispatcherDeps } from './dispatcher/deps.js';
import { createRedisLossDetector } from './dispatcher/redis-loss.js';
import { startSweeper } from './dispatcher/sweeper.js';
import { createEventHandler } from './events/handle-event.js';
import { startOperationRunner } from './operations/runner.js';
import { startWebhookDeliverer } from './webhooks/deliverer.js';
import { startRetention } from './retention/cleanup.js';

const BATCH_CONCURRENCY = 2;

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'pipeline-service', level: config.logLevel });
// Event batches and the sweeper's statements run beside each other.
const db = createDb(config.databaseUrl, { ...databaseOptions(config, 'pipeline-service'), max: Math.min(config.databasePoolMax, BATCH_CONCURRENCY + 4) });
observeDatabasePool(() => poolSample(db));
const consumerRedis = createRedis(config.redis, 'worker');
const producerRedis = createRedis(config.redis, 'producer');
// GET /metrics reads depth and oldest age of the StageNext queues this process published to recently.
const queueStats = createStageNextQueueStats(producerRedis, config.queuePrefix);
observeStageNextQueues(() => queueStats.read());
// And the backlog of the results shards and pipeline-events, a fixed set of nine queues: reported
// by this service alone (its replicas all report the same numbers), not by every sampler.
const backlog = createBacklogStats(producerRedis, config.queuePrefix);
observeInternalQueues(() => backlog.read());

const publisher = createStageNextPublisher(producerRedis, config.queuePrefix, { onPublished: (queue) => queueStats.note(queue) });
const events = createPipelineEventsProducer(producerRedis, config.queuePrefix);
const results = createStageResultsProducer(producerRedis, config.queuePrefix);
const engine = new Engine({ db, publisher, events, logger, random: Math.random, maxActiveStages: config.maxActiveStages });
const deps: DispatcherDeps = {
  db,
  engine,
  publisher,
  results,
  logger,
  redisLoss: createRedisLossDetector(producerRedis, config.queuePrefix),
  queueSettings: {
    states: (queues) => stageNextQueueStates(producerRedis, config.queuePrefix, queues),
    setPaused: (queue, paused) => setStageNextPaused(producerRedis, config.queuePrefix, queue, paused),
    setConcurrency: (queue, concurrency) => setStageNextConcurrency(producerRedis, config.queuePrefix, queue, concurrency),
  },
};
const passes = createPassRunner(engine, { maxBatch: config.batchSize, maxConcurrent: BATCH_CONCURRENCY });
const consumers = createPipelineEventsConsumer(consumerRedis, config.queuePrefix, createEventHandler(passes, logger), {
  concurrency: config.eventConcurrency,
});
for (const consumer of consumers) {
  consumer.on('failed', (job, err) => logger.warn({ err, jobId: job?.id }, 'pipeline event failed'));
  // Without a listener BullMQ prints its connection errors (a Redis outage) as raw stacks.
  consumer.on('error', (err) => logger.warn({ err }, 'pipeline event consumer: Redis error'));
}
const sweeper = startSweeper(deps, {
  intervalMs: config.sweepIntervalMs,
  eventGraceMs: 1000,
  lostMessageAfterSeconds: config.lostMessageAfterSeconds,
});
const retention = startRetention({ db, logger, clock: () => new Date() }, config.retention);
const operations = startOperationRunner({ db, logger, pass: (pipelineId) => passes.submit({ pipelineId }) }, { tickMs: config.operationsTickMs });
const webhooks = startWebhookDeliverer({ sql: sqlOf(db), logger }, config.webhooks);

const app = buildApp(logger, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(producerRedis) });
const server = await listen(app, config.host, config.port);
const metrics = await listenMetrics(config.host, config.metricsPort);
logger.info({ port: server.port, metricsPort: metrics.port, redis: describeRedis(config.redis) }, 'pipeline-service listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['event consumers', async () => Promise.all(consumers.map((c) => c.close()))],
  ['sweeper', () => sweeper.stop()],
  ['bulk operations', () => operations.stop()],
  ['webhook deliveries', () => webhooks.stop()],
  ['retention', () => retention.stop()],
  ['passes', () => passes.drain()],
  ['producers', async () => Promise.all([publisher.close(), events.close(), results.close(), queueStats.close(), backlog.close()])],
  ['redis', async () => Promise.all([consumerRedis.quit(), producerRedis.quit()])],
  ['postgres', () => db.$disconnect()],
  ['metrics server', () => metrics.close()],
  ['telemetry', () => shutdownTracing()],
]);
