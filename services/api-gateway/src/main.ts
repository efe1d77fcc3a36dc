import './instrument.js';
import { databaseOptions, describeRedis, loadConfig } from '@po/config';
import { API_KEY_CACHE, createApiKeyCache, createDb, poolSample, readCursorSecret, sqlOf } from '@po/db';
import { lazyCursorSigner, listen, listenMetrics, onShutdown } from '@po/http';
import { Engine } from '@po/engine';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  createStageNextQueueStats,
  pingRedis,
  readStageNextDepths,
  setStageNextConcurrency,
  setStageNextPaused,
} from '@po/queues';
import { createLogger, observeDatabasePool, observeStageNextQueues, shutdownTracing } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import { dashboardDistDir } from './http/dashboard/dist.js';
import { createFirstPasses } from './pipelines/first-pass.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'api-gateway', level: config.logLevel });
const db = createDb(config.databaseUrl, { ...databaseOptions(config, 'api-gateway'), max: config.databasePoolMax });
observeDatabasePool(() => poolSample(db));
const redis = createRedis(config.redis, 'producer');
const events = createPipelineEventsProducer(redis, config.queuePrefix);
// Its first passes publish the first stages of most pipelines: GET /metrics reads the depth and
// age of those queues, as pipeline-service's does for the queues it publishes to.
const queueStats = createStageNextQueueStats(redis, config.queuePrefix);
observeStageNextQueues(() => queueStats.read());
const publisher = createStageNextPublisher(redis, config.queuePrefix, { onPublished: (queue) => queueStats.note(queue) });
const engine = new Engine({ db, publisher, events, logger, random: Math.random, maxActiveStages: config.maxActiveStages });
const firstPasses = createFirstPasses(engine, logger);
const keys = createApiKeyCache(sqlOf(db), API_KEY_CACHE);
if (sqlOf(db).notifications.unavailable) logger.warn(sqlOf(db).notifications.unavailable);
const cursors = lazyCursorSigner(() => readCursorSecret(sqlOf(db)));

const app = buildApp(
  {
    db,
    sql: sqlOf(db),
    keys,
    events,
    firstPasses,
    logger,
    clock: () => new Date(),
    cancelTimeoutSeconds: config.cancelTimeoutSeconds,
    cursors,
    queueDepths: (queues) => readStageNextDepths(redis, config.queuePrefix, queues),
    setQueuePaused: (queue, paused) => setStageNextPaused(redis, config.queuePrefix, queue, paused),
    setQueueConcurrency: (queue, concurrency) => setStageNextConcurrency(redis, config.queuePrefix, queue, concurrency),
    webhookAllowPrivateNetworks: config.webhookAllowPrivateNetworks,
  },
  config,
  { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(redis) },
  { distDir: dashboardDistDir() },
);
const server = await listen(app, config.host, config.port);
const metrics = await listenMetrics(config.host, config.metricsPort);
logger.info({ port: server.port, metricsPort: metrics.port, redis: describeRedis(config.redis) }, 'api-gateway listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['first passes', () => firstPasses.drain()],
  ['producers', async () => Promise.all([events.close(), publisher.close(), queueStats.close()])],
  ['redis', async () => void (await redis.quit())],
  ['key cache', () => keys.close()],
  ['postgres', () => db.$disconnect()],
  ['metrics server', () => metrics.close()],
  ['telemetry', () => shutdownTracing()],
]);
