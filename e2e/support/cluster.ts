import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { TEST_REDIS_URL, cleanupRedisPrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from '@po/testing';
import { ManagedProcess, freePort, serviceProcess, type ServiceName } from './processes.js';

const run = promisify(execFile);

export interface ClusterOptions {
  /** Replicas per service (default 1 each); 0 leaves a service out. */
  replicas?: Partial<Record<ServiceName, number>>;
  env?: Record<string, string>;
  /**
   * A Redis of the test's own (e.g. a RedisServer it restarts) instead of the shared test Redis.
   * Its keys are left to that server's owner, which throws the whole server away.
   */
  redisUrl?: string;
  /**
   * A database of the test's own (e.g. reached through a proxy the test re-points, see
   * postgres-replicas.ts, or through a pooler given in `env`) instead of a fresh test database;
   * its owner drops it, not stop().
   */
  database?: TestDatabase;
}

/**
 * The services as separate processes over a fresh database (or the test's own) and queue prefix:
 * what `npm run up` runs, with replicas and per-test settings, so e2e tests can kill and restart
 * any process.
 */
export async function startCluster(options: ClusterOptions = {}) {
  const database: TestDatabase = options.database ?? (await createTestDatabase());
  const prefix = testQueuePrefix('e2e');
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: database.url,
    REDIS_URL: options.redisUrl ?? TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    // Several processes share one PostgreSQL in tests: keep each pool small.
    DATABASE_POOL_MAX: '4',
    ...options.env,
  };
  const counts: Record<ServiceName, number> = {
    'api-gateway': 1,
    'worker-gateway': 1,
    'pipeline-service': 1,
    'scheduler-service': 1,
    'result-consumer': 1,
    ...options.replicas,
  };
  let services: ManagedProcess[] = [];
  for (let attempt = 1; ; attempt += 1) {
    services = [];
    for (const [name, count] of Object.entries(counts) as [ServiceName, number][]) {
      for (let i = 0; i < count; i += 1) {
        services.push(serviceProcess(name, env, await freePort(), count > 1 ? `${name}-${i + 1}` : name, await freePort()));
      }
    }
    services.forEach((s) => s.start());
    try {
      await Promise.all(services.map((s) => s.waitReady()));
      break;
    } catch (err) {
      // A service that cannot start must not leave its siblings or the database behind.
      await Promise.all(services.map((s) => s.kill()));
      // A port found free was taken before the service bound it (another test file's process, an
      // outgoing connection): the same cluster on new ports.
      if (attempt < 3 && String(err).includes('EADDRINUSE')) continue;
      if (!options.redisUrl) await cleanupRedisPrefix(prefix);
      if (!options.database) await database.drop();
      throw err;
    }
  }
  const find = (label: string) => {
    const s = services.find((p) => p.name === label);
    if (!s) throw new Error(`no process ${label}`);
    return s;
  };
  const workers: ManagedProcess[] = [];

  return {
    env,
    database,
    prefix,
    services,
    workers,
    process: find,
    apiUrl: find(counts['api-gateway'] > 1 ? 'api-gateway-1' : 'api-gateway').url,
    workerUrl: find(counts['worker-gateway'] > 1 ? 'worker-gateway-1' : 'worker-gateway').url,
    /** Creates an application through the admin command; returns its key. */
    async createApp(name: string): Promise<{ applicationId: number; apiKey: string }> {
      const { stdout } = await run(process.execPath, ['services/api-gateway/dist/admin/cli.js', 'apps', 'create', '--name', name], { env });
      return JSON.parse(stdout) as { applicationId: number; apiKey: string };
    },
    /** Starts the example SDK worker as a process. */
    startWorker(label: string, workerEnv: Record<string, string>): ManagedProcess {
      const worker = new ManagedProcess(label, 'examples/dist/example-worker.js', { ...env, ...workerEnv }).start();
      workers.push(worker);
      return worker;
    },
    allLines(): string[] {
      return [...services, ...workers].flatMap((p) => p.lines);
    },
    async stop(): Promise<void> {
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all(services.map((s) => s.stop()));
      if (!options.redisUrl) await cleanupRedisPrefix(prefix);
      if (!options.database) await database.drop();
    },
  };
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>;
