import './instrument.js';
import { databaseOptions, describeRedis, loadConfig } from '@po/config';
import { API_KEY_CACHE, WORKER_SESSION_CACHE, createApiKeyCache, createDb, createWorkerSessionCache, poolSample, sqlOf } from '@po/db';
import { listen, listenMetrics, onShutdown } from '@po/http';
import { StageNextFetcher, createRedis, createStageResultsProducer, pingRedis } from '@po/queues';
import { createLogger, observeDatabasePool, observeDeliveriesInflight, shutdownTracing, visibilityRequeues } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import { watchBroker } from './deliveries/broker-watch.js';
import { Deliveries } from './deliveries/deliveries.js';
import { followQueueNews } from './deliveries/queue-news.js';
import { observeWorkerGauges } from './sessions/metrics.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'worker-gateway', level: config.logLevel });
const db = createDb(config.databaseUrl, { ...databaseOptions(config, 'worker-gateway'), max: config.databasePoolMax });
observeDatabasePool(() => poolSample(db));
const producerRedis = createRedis(config.redis, 'producer');
const fetchRedis = createRedis(config.redis, 'worker');
const wakeRedis = createRedis(config.redis, 'worker');

const fetcher = new StageNextFetcher(fetchRedis, config.queuePrefix, {
  visibilityTimeoutMs: config.visibilityTimeoutMs,
  maxQueues: config.maxFetchers,
  stalledIntervalMs: Math.min(30_000, Math.max(1000, Math.floor(config.visibilityTimeoutMs / 2))),
  // A lapsed lock requeued by BullMQ's stalled check is a visibility-timeout requeue too.
  onStalled: () => visibilityRequeues().inc(),
});
const deliveries = new Deliveries(fetcher, config, logger);
deliveries.startSweeping();
await followQueueNews(wakeRedis, config.queuePrefix, deliveries);

// A Redis that stops answering keeps its connections up: pulls are refused once a PING goes unanswered.
const broker = watchBroker(fetchRedis, { silentAfterMs: config.redis.commandTimeoutMs });
const keys = createApiKeyCache(sqlOf(db), API_KEY_CACHE);
const sessions = createWorkerSessionCache(sqlOf(db), WORKER_SESSION_CACHE);
if (sqlOf(db).notifications.unavailable) logger.warn(sqlOf(db).notifications.unavailable);
const deps = {
  db,
  keys,
  sessions,
  results: createStageResultsProducer(producerRedis, config.queuePrefix, {
    minReplicasAck: config.redis.minReplicasAck,
    replicaAckTimeoutMs: config.redis.replicaAckTimeoutMs,
    commitLingerMs: config.resultsCommitLingerMs,
  }),
  brokerReady: broker.ready,
  logger,
  clock: () => new Date(),
  config,
};
observeDeliveriesInflight(() => deliveries.inflight);
observeWorkerGauges(db, config.heartbeatIntervalSeconds, deps.clock);
const app = buildApp(deps, deliveries, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(producerRedis) });
const server = await listen(app, config.host, config.port);
const metrics = await listenMetrics(config.host, config.metricsPort);
logger.info({ port: server.port, metricsPort: metrics.port, redis: describeRedis(config.redis) }, 'worker-gateway listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['waiting pulls', async () => deliveries.stopWaiting()],
  ['http server', () => server.close()],
  ['held deliveries', () => deliveries.releaseAll()],
  ['fetchers', () => fetcher.close()],
  ['broker watch', async () => broker.stop()],
  ['result producer', () => deps.results.close()],
  ['redis', async () => Promise.all([producerRedis.quit(), fetchRedis.quit(), wakeRedis.quit()])],
  ['key cache', () => keys.close()],
  ['session cache', () => sessions.close()],
  ['postgres', () => db.$disconnect()],
  ['metrics server', () => metrics.close()],
  ['telemetry', () => shutdownTracing()],
]);
