import './instrument.js';
import { databaseOptions, describeRedis, loadConfig } from '@po/config';
import { createDb, poolSample } from '@po/db';
import { listen, listenMetrics, onShutdown } from '@po/http';
import { createPipelineEventsProducer, createRedis, pingRedis } from '@po/queues';
import { createLogger, observeDatabasePool, shutdownTracing } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import type { SchedulerDeps } from './scheduler/deps.js';
import { warmFireConnection } from './scheduler/fire-batch.js';
import { startSchedulerLoop } from './scheduler/loop.js';
import { AHEAD_WAITING_PER_WORKER } from './scheduler/pass.js';
import { PLAN_CACHE_BYTES, PlanCache } from './scheduler/plan-cache.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'scheduler-service', level: config.logLevel });
// An ahead pass holds up to AHEAD_WAITING_PER_WORKER + 1 transactions per unit of concurrency
// while the regular loop goes on beside it.
const db = createDb(config.databaseUrl, {
  ...databaseOptions(config, 'scheduler-service'),
  max: Math.min(config.databasePoolMax, (AHEAD_WAITING_PER_WORKER + 1) * config.concurrency + 4),
  onConnect: warmFireConnection,
});
observeDatabasePool(() => poolSample(db));
const redis = createRedis(config.redis, 'producer');

const deps: SchedulerDeps = {
  db,
  events: createPipelineEventsProducer(redis, config.queuePrefix),
  logger,
  clock: () => new Date(),
  misfireGraceSeconds: config.misfireGraceSeconds,
  plans: new PlanCache(PLAN_CACHE_BYTES),
};
const scheduler = startSchedulerLoop(deps, { pollIntervalMs: config.pollIntervalMs, concurrency: config.concurrency, batchSize: config.batchSize, aheadMs: config.prepareAheadMs });

const app = buildApp(logger, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(redis) });
const server = await listen(app, config.host, config.port);
const metrics = await listenMetrics(config.host, config.metricsPort);
logger.info({ port: server.port, metricsPort: metrics.port, redis: describeRedis(config.redis) }, 'scheduler-service listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['scheduler loop', () => scheduler.stop()],
  ['event producer', () => deps.events.close()],
  ['redis', async () => void (await redis.quit())],
  ['postgres', () => db.$disconnect()],
  ['metrics server', () => metrics.close()],
  ['telemetry', () => shutdownTracing()],
]);
