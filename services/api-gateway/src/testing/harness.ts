import { Writable } from 'node:stream';
import { API_KEY_CACHE, createApiKeyCache, readCursorSecret, sqlOf, type Db } from '@po/db';
import { lazyCursorSigner, listen } from '@po/http';
import { Engine } from '@po/engine';
import {
  createPipelineEventsProducer,
  createRedis,
  createStageNextPublisher,
  readStageNextDepths,
  setStageNextConcurrency,
  setStageNextPaused,
  type PipelineEventsProducer,
} from '@po/queues';
import { createLogger } from '@po/telemetry';
import {
  TEST_REDIS_URL,
  cleanupRedisPrefix,
  createTestDatabase,
  testQueuePrefix,
} from '@po/testing';
import { runAdmin } from '../admin/commands.js';
import { buildApp } from '../app.js';
import { LOGS_ANON_DEFAULTS, type ApiGatewayConfig } from '../config.js';
import type { Deps } from '../deps.js';
import {
  FIRST_PASS_DEFAULTS,
  announceOnly,
  createFirstPasses,
  type FirstPassOptions,
} from '../pipelines/first-pass.js';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
}

export interface CallOptions {
  key?: string | null;
  json?: unknown;
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

/**
 * An api-gateway on an ephemeral port, over its own database and queue prefix, with two
 * applications (A and B) and every log line captured for secret searches.
 */
export async function startGateway(
  overrides: Partial<Pick<Deps, 'cancelTimeoutSeconds' | 'events' | 'clock' | 'webhookAllowPrivateNetworks'>> & {
    maxBodyBytes?: number;
    logsAnonLimit?: ApiGatewayConfig['logsAnonLimit'];
    /** The dashboard's build to serve under /ui/ (default: none, so /ui/ is a 404). */
    dashboardDistDir?: string | null;
    traceUrlTemplate?: string | null;
    /**
     * Run new pipelines' first passes in the gateway, as the product does (decision 0102); by
     * default they are announced to pipeline-service, which these tests do not run, so stages
     * stay as the requests under test left them.
     */
    firstPasses?: boolean | (Partial<FirstPassOptions> & { maxActiveStages?: number });
  } = {},
) {
  const database = await createTestDatabase();
  const prefix = testQueuePrefix('gw');
  const redis = createRedis(TEST_REDIS_URL, 'producer');
  const events: PipelineEventsProducer =
    overrides.events ?? createPipelineEventsProducer(redis, prefix);
  const logLines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ service: 'api-gateway', level: 'debug', destination });
  const db: Db = database.db;
  const keys = createApiKeyCache(sqlOf(db), API_KEY_CACHE);
  const publisher = createStageNextPublisher(redis, prefix);
  const passOptions = overrides.firstPasses === true ? {} : overrides.firstPasses || null;
  const { maxActiveStages = 0, ...passLimits } = passOptions ?? {};
  const firstPasses = passOptions
    ? createFirstPasses(new Engine({ db, publisher, events, logger, random: Math.random, maxActiveStages }), logger, {
        ...FIRST_PASS_DEFAULTS,
        ...passLimits,
      })
    : announceOnly;
  const deps: Deps = {
    db,
    sql: sqlOf(db),
    keys,
    events,
    firstPasses,
    logger,
    clock: overrides.clock ?? (() => new Date()),
    cancelTimeoutSeconds: overrides.cancelTimeoutSeconds ?? 10,
    cursors: lazyCursorSigner(() => readCursorSecret(sqlOf(db))),
    queueDepths: (queues) => readStageNextDepths(redis, prefix, queues),
    setQueuePaused: (queue, paused) => setStageNextPaused(redis, prefix, queue, paused),
    setQueueConcurrency: (queue, concurrency) => setStageNextConcurrency(redis, prefix, queue, concurrency),
    webhookAllowPrivateNetworks: overrides.webhookAllowPrivateNetworks ?? false,
  };
  const app = buildApp(
    deps,
    {
      maxBodyBytes: overrides.maxBodyBytes ?? 33_554_432,
      logsAnonLimit: overrides.logsAnonLimit ?? LOGS_ANON_DEFAULTS,
      build: { version: '0.5.0', commit: null, builtAt: null },
      dashboard: { traceUrlTemplate: overrides.traceUrlTemplate ?? null },
    },
    { postgres: () => db.$queryRaw`SELECT 1`, redis: () => redis.ping() },
    { distDir: overrides.dashboardDistDir ?? null },
  );
  const server = await listen(app, '127.0.0.1', 0);
  const url = `http://127.0.0.1:${server.port}`;
  const a = (await runAdmin(db, ['apps', 'create', '--name', 'A'])) as {
    applicationId: number;
    apiKey: string;
  };
  const b = (await runAdmin(db, ['apps', 'create', '--name', 'B'])) as {
    applicationId: number;
    apiKey: string;
  };

  async function call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? a.apiKey : options.key;
    if (key !== null) headers['x-api-key'] = key;
    let body: string | Buffer | undefined = options.raw;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] ??= 'application/json';
    }
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

  /** Another key of application A that is no longer valid: expired a minute ago, or disabled. */
  async function invalidKey(kind: 'expired' | 'disabled'): Promise<string> {
    const expiry =
      kind === 'expired' ? ['--expires-at', new Date(Date.now() - 60_000).toISOString()] : [];
    const key = (await runAdmin(db, [
      'apps',
      'keys',
      'create',
      '--app',
      String(a.applicationId),
      ...expiry,
    ])) as { apiKey: string; keyId: number };
    if (kind === 'disabled')
      await runAdmin(db, ['apps', 'keys', 'disable', '--key-id', String(key.keyId)]);
    return key.apiKey;
  }

  return {
    url,
    db,
    deps,
    invalidKey,
    prefix,
    redis,
    logLines,
    appA: { id: a.applicationId, key: a.apiKey },
    appB: { id: b.applicationId, key: b.apiKey },
    call,
    async close() {
      await server.close();
      await firstPasses.drain();
      await keys.close();
      await events.close();
      await publisher.close();
      await cleanupRedisPrefix(prefix);
      await redis.quit();
      await database.drop();
    },
  };
}

export type Gateway = Awaited<ReturnType<typeof startGateway>>;
