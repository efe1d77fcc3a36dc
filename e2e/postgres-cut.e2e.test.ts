import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_ADMIN_URL } from '@po/testing';
import { startCluster, type Cluster } from './support/cluster.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';

const PIPELINES = 100;
const PACE_MS = 80;
const CUTS = 5;

/**
 * Issue 9, durability gaps: every PostgreSQL connection of the services cut (pg_terminate_backend)
 * a few times while pipelines flow. Transactions in flight fail; pools must replace the dead
 * connections and the work must still finish exactly once.
 */
describe('PostgreSQL connections terminated mid-run', () => {
  let cluster: Cluster;
  let key: string;

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { 'scheduler-service': 0 },
      env: { GATEWAY_VISIBILITY_TIMEOUT: '3', DISPATCH_SWEEP_INTERVAL_MS: '200' },
    });
    key = (await cluster.createApp('postgres-cut')).apiKey;
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `postgres-cut-${i}`,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '8',
      });
    }
  }, 120_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[postgres-cut] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
  }, 60_000);

  it('completes every pipeline with each stage applied exactly once, and every service stays ready', async () => {
    const database = new URL(cluster.database.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: TEST_DATABASE_ADMIN_URL });
    await admin.connect();
    try {
      const creating = createStream(cluster, key, 'pg', PIPELINES, PACE_MS);
      for (let cut = 1; cut <= CUTS; cut += 1) {
        await sleep(1200);
        const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
        console.log(`[postgres-cut] cut ${cut}: terminated ${rowCount} connections`);
      }
      const ids = await creating;
      console.log(`[postgres-cut] ${ids.length} of ${PIPELINES} created; ${await unfinishedCount(cluster)} not finished yet`);

      const problems = await streamProblems(cluster, key, ids, 45_000);
      expect({ created: ids.length, problems, unready: await unreadyServices(cluster) }).toEqual({ created: PIPELINES, problems: [], unready: [] });
    } finally {
      await admin.end();
    }
  }, 80_000);
});
