import './instrument.js';
import { loadConfig } from '@po/config';
import { API_KEY_CACHE, createApiKeyCache, createDb, readCursorSecret, sqlOf } from '@po/db';
import { lazyCursorSigner, listen, listenMetrics, onShutdown } from '@po/http';
import { createPipelineEventsProducer, createRedis, pingRedis, readStageNextDepths } from '@po/queues';
import { createLogger, shutdownTracing } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import { dashboardDistDir } from './http/dashboard/dist.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'api-gateway', level: config.logLevel });
const db = createDb(config.databaseUrl, { max: config.databasePoolMax, ca: config.databaseCa });
const redis = createRedis(config.redisUrl, 'producer');
const events = createPipelineEventsProducer(redis, config.queuePrefix);
const keys = createApiKeyCache(sqlOf(db), API_KEY_CACHE);
const cursors = lazyCursorSigner(() => readCursorSecret(sqlOf(db)));

const app = buildApp(
  {
    db,
    sql: sqlOf(db),
    keys,
    events,
    logger,
    clock: () => new Date(),
    cancelTimeoutSeconds: config.cancelTimeoutSeconds,
    cursors,
    queueDepths: (queues) => readStageNextDepths(redis, config.queuePrefix, queues),
  },
  config,
  { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(redis) },
  { distDir: dashboardDistDir() },
);
const server = await listen(app, config.host, config.port);
const metrics = await listenMetrics(config.host, config.metricsPort);
logger.info({ port: server.port, metricsPort: metrics.port }, 'api-gateway listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['event producer', () => events.close()],
  ['redis', async () => void (await redis.quit())],
  ['key cache', () => keys.close()],
  ['postgres', () => db.$disconnect()],
  ['metrics server', () => metrics.close()],
  ['telemetry', () => shutdownTracing()],
]);
