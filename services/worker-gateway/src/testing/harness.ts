import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { stageQueueName, type StageNextMessage } from '@po/contracts';
import { API_KEY_CACHE, WORKER_SESSION_CACHE, createApiKey, createApiKeyCache, createWorkerSessionCache, createApplication, sqlOf, type Db } from '@po/db';
import { insertPipeline } from '@po/engine';
import { startExecutions } from '@po/engine';
import { planPipeline, type PipelineDefinitionInput } from '@po/domain';
import { hashSecret, listen } from '@po/http';
import {
  StageNextFetcher,
  createRedis,
  createStageNextPublisher,
  createStageResultsProducer,
  type StageResultsProducer,
} from '@po/queues';
import type { RedisConfig } from '@po/config';
import { createLogger } from '@po/telemetry';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix } from '@po/testing';
import { buildApp } from '../app.js';
import { parseConfig, type WorkerGatewayConfig } from '../config.js';
import { watchBroker } from '../deliveries/broker-watch.js';
import { Deliveries } from '../deliveries/deliveries.js';
import { followQueueNews } from '../deliveries/queue-news.js';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
}

/**
 * A worker-gateway on an ephemeral port over its own database and queue prefix, with two
 * applications (A, B) and helpers to seed dispatched stages the way the dispatcher would.
 */
export async function startWorkerGateway(
  env: Record<string, string> = {},
  overrides: {
    results?: StageResultsProducer;
    brokerReady?: () => boolean;
    /** A Redis of the test's own (its owner throws it away: the prefix is not cleaned up). */
    redis?: RedisConfig;
  } = {},
) {
  const database = await createTestDatabase();
  const prefix = testQueuePrefix('wg');
  const config: WorkerGatewayConfig = { ...parseConfig({ QUEUE_PREFIX: prefix, ...env }) };
  const redisConfig = overrides.redis ?? TEST_REDIS_URL;
  const producerRedis = createRedis(redisConfig, 'producer');
  const fetchRedis = createRedis(redisConfig, 'worker');
  const wakeRedis = createRedis(redisConfig, 'worker');
  const logLines: string[] = [];
  const logger = createLogger({
    service: 'worker-gateway',
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        logLines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    }),
  });
  const fetcher = new StageNextFetcher(fetchRedis, prefix, {
    visibilityTimeoutMs: config.visibilityTimeoutMs,
    maxQueues: config.maxFetchers,
    stalledIntervalMs: Math.max(500, Math.floor(config.visibilityTimeoutMs / 2)),
  });
  const deliveries = new Deliveries(fetcher, config, logger);
  deliveries.startSweeping(200);
  await followQueueNews(wakeRedis, prefix, deliveries);
  const results = overrides.results ?? createStageResultsProducer(producerRedis, prefix);
  const db: Db = database.db;
  const keys = createApiKeyCache(sqlOf(db), API_KEY_CACHE);
  const sessions = createWorkerSessionCache(sqlOf(db), WORKER_SESSION_CACHE);
  await sessions.listening;
  // As main.ts wires it.
  const broker = watchBroker(fetchRedis, { silentAfterMs: overrides.redis?.commandTimeoutMs ?? 5000 });
  const brokerReady = overrides.brokerReady ?? broker.ready;
  const deps = { db, keys, sessions, results, brokerReady, logger, clock: () => new Date(), config };
  const redisCheck = () => (brokerReady() ? producerRedis.ping() : Promise.reject(new Error('broker unavailable')));
  const app = buildApp(deps, deliveries, { postgres: () => db.$queryRaw`SELECT 1`, redis: redisCheck });
  const server = await listen(app, '127.0.0.1', 0);
  const url = `http://127.0.0.1:${server.port}`;
  const publisher = createStageNextPublisher(producerRedis, prefix);

  const newApp = async (name: string) => {
    const app = await createApplication(db, name);
    const key = `pos_test_${randomUUID()}`;
    await createApiKey(db, { applicationId: app.id, keyHash: hashSecret(key), expiresAt: null });
    return { id: app.id, key };
  };
  const appA = await newApp('A');
  const appB = await newApp('B');

  async function call(method: string, path: string, options: { json?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    const body = options.raw ?? (options.json === undefined ? undefined : JSON.stringify(options.json));
    const res = await fetch(`${url}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: res.status, headers: res.headers, text, body: parsed };
  }

  /** Creates a pipeline and dispatches the given stages (by index) as the dispatcher would. */
  async function seedDispatched(applicationId: number, definition: PipelineDefinitionInput, dispatch: number[] = [0]) {
    const planned = planPipeline(definition, { applicationId });
    if (!planned.ok) throw new Error(JSON.stringify(planned.errors));
    const now = new Date();
    const pipelineId = await db.$transaction((tx) => insertPipeline(tx, planned.pipeline, now));
    const stages = await db.stage.findMany({ where: { pipelineId: BigInt(pipelineId) }, orderBy: { position: 'asc' } });
    const executions = dispatch.map((i) => ({ stageId: Number(stages[i]!.id), executionId: randomUUID() }));
    await db.$transaction((tx) => startExecutions(tx, applicationId, executions, now));
    const messages: StageNextMessage[] = executions.map((e, j) => {
      const s = stages[dispatch[j]!]!;
      return {
        applicationId,
        pipelineId,
        stageId: e.stageId,
        executionId: e.executionId,
        stageName: s.name,
        stageHandlerName: s.handlerName,
        input: s.input,
        options: s.options as never,
        pipelineContextItems: [],
        traceId: planned.pipeline.traceId,
        spanId: s.spanId,
        dispatchedAt: now.toISOString(),
        timeOutSeconds: null,
        previousAttempts: 0,
      };
    });
    for (const m of messages) await publisher.publish(stageQueueName(applicationId, m.stageHandlerName), [m]);
    return { pipelineId, stageIds: stages.map((s) => Number(s.id)), executions, messages };
  }

  /** Bootstraps a worker of app A (or the given key) and returns its session. */
  async function bootstrap(instanceId: string, handlers: string[], key = appA.key) {
    const r = await call('POST', '/workers/bootstrap', { json: { instanceId, handlers }, headers: { 'x-api-key': key } });
    if (r.status !== 200) throw new Error(`bootstrap ${r.status} ${r.text}`);
    return r.body as { workerId: string; sessionToken: string; queues: string[]; applicationId: number };
  }

  return {
    url,
    db,
    prefix,
    config,
    deliveries,
    fetcher,
    logLines,
    appA,
    appB,
    call,
    seedDispatched,
    bootstrap,
    async close() {
      deliveries.stopWaiting();
      await server.close();
      await deliveries.releaseAll();
      await fetcher.close();
      broker.stop();
      await publisher.close();
      await results.close();
      await keys.close();
      await sessions.close();
      await Promise.all([producerRedis.quit(), fetchRedis.quit(), wakeRedis.quit()]);
      if (!overrides.redis) await cleanupRedisPrefix(prefix);
      await database.drop();
    },
  };
}

export type WorkerGatewayHarness = Awaited<ReturnType<typeof startWorkerGateway>>;
