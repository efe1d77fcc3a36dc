import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';
import { RedisServer } from './support/redis-server.js';

const PIPELINES = 100;
const PACE_MS = 80;

/**
 * Issue 9, durability gaps: Redis restarted under a running stream of pipelines, once gracefully
 * and once with kill -9. The dedicated redis-server fsyncs its AOF on every write, so whatever it
 * acknowledged survives; the services may log errors while it is away, and must recover alone.
 */
describe('Redis restarted mid-run (graceful, then kill -9) with AOF fsync always', () => {
  let redis: RedisServer;
  let cluster: Cluster;
  let key: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    cluster = await startCluster({
      redisUrl: redis.url,
      replicas: { 'scheduler-service': 0 },
      env: { GATEWAY_VISIBILITY_TIMEOUT: '3', DISPATCH_SWEEP_INTERVAL_MS: '200' },
    });
    key = (await cluster.createApp('redis-restart')).apiKey;
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `redis-restart-${i}`,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '8',
      });
    }
  }, 60_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[redis-restart] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
    await redis?.destroy();
  }, 60_000);

  it('completes every pipeline with each stage run and applied exactly once, and every service recovers by itself', async () => {
    const creating = createStream(cluster, key, 'redis', PIPELINES, PACE_MS);
    const outage = async (how: 'graceful' | 'kill -9', stop: () => Promise<void>) => {
      await stop();
      await sleep(1000);
      await redis.start();
      console.log(`[redis-restart] Redis back after a ${how} stop`);
    };
    await sleep(2000);
    await outage('graceful', () => redis.stop());
    await sleep(2000);
    await outage('kill -9', () => redis.kill());
    const ids = await creating;
    console.log(`[redis-restart] ${ids.length} of ${PIPELINES} created; ${await unfinishedCount(cluster)} not finished yet`);

    const problems = await streamProblems(cluster, key, ids, 45_000);
    expect({ created: ids.length, problems, unready: await unreadyServices(cluster) }).toEqual({ created: PIPELINES, problems: [], unready: [] });
  }, 80_000);
});
