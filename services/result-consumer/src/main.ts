import { loadConfig } from '@po/config';
import { createDb } from '@po/db';
import { listen, onShutdown } from '@po/http';
import { createRedis, pingRedis } from '@po/queues';
import { createLogger } from '@po/telemetry';
import { buildApp } from './app.js';
import { parseConfig } from './config.js';

const config = loadConfig(parseConfig);
const logger = createLogger({ service: 'result-consumer', level: config.logLevel });
const db = createDb(config.databaseUrl);
const redis = createRedis(config.redisUrl, 'worker');

const app = buildApp(logger, { postgres: () => db.$queryRaw`SELECT 1`, redis: () => pingRedis(redis) });
const server = await listen(app, config.host, config.port);
logger.info({ port: server.port }, 'result-consumer listening');

onShutdown(logger, config.shutdownTimeoutMs, [
  ['http server', () => server.close()],
  ['redis', async () => void (await redis.quit())],
  ['postgres', () => db.$disconnect()],
]);
