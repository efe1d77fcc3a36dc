import { loadConfig } from '@po/config';
import { createDb } from '@po/db';
import { listen, onShutdown } from '@po/http';
import { createPipelineEventsConsumer, createRedis, pingRedis } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';
import { createEventHandler } from './events/handle-event.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'pipeline-service', level: config.logLevel });
const db = createDb(config.databaseUrl);
const redis = createRedis(config.redisUrl, 'worker');

const consumer = createPipelineEventsConsumer(redis, config.queuePrefix, createEventHandler(logger), {
  concurrency: config.eventConcurrency,
});
consumer.on('failed', (job, err) => logger.warn({ err, jobId: job?.id }, 'pipeline event failed'));

const app = buildApp(logger, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(redis) });
const server = await listen(app, config.host, config.port);
logger.info({ port: server.port }, 'pipeline-service listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['event consumer', () => consumer.close()],
  ['redis', async () => void (await redis.quit())],
  ['postgres', () => db.$disconnect()],
]);
