import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { waitFor } from './support/http.js';
import { failoverProblems, probeWorker, streamEchoPipelines, type Accepted } from './support/failover-run.js';
import { errorLines, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';
import { RedisCluster } from './support/redis-cluster.js';

/** Pipelines per application, created at this pace across the failover. */
const PIPELINES = 24;
const PACE_MS = 150;
/** The primary is killed this long after the first creation. */
const KILL_AFTER_MS = 1500;

const bullName = (applicationId: number) => `{app_${applicationId}_echo_StageNext}`;

/**
 * Issue 29 item 2: the services on a six-node Redis Cluster (three primaries, a replica each,
 * REDIS_MIN_REPLICAS_ACK=1). Two applications whose StageNext queues live on different primaries run
 * pipelines through SDK workers; the primary owning one of those queues is SIGKILLed mid-run, its
 * replica takes over, the killed node comes back as a replica. Every pipeline completes, each stage
 * once; every result the worker-gateway accepted (202) — the test posts some itself across the
 * failover and records them — was applied, none lost to a lease expiry.
 */
describe('Redis Cluster: a primary SIGKILLed while pipelines run', () => {
  let redis: RedisCluster;
  let cluster: Cluster;
  const apps: { applicationId: number; apiKey: string; master: number }[] = [];

  beforeAll(async () => {
    redis = await RedisCluster.start();
    cluster = await startCluster({
      // The keys live and die with the test's own cluster; REDIS_CLUSTER_NODES wins over REDIS_URL.
      redisUrl: `redis://127.0.0.1:${redis.ports[0]}`,
      env: {
        ...redis.env,
        REDIS_COMMAND_TIMEOUT_MS: '2000',
        // A delivery whose pull answer was lost in the failover sits active until its visibility timeout.
        GATEWAY_VISIBILITY_TIMEOUT: '8',
        DISPATCH_LOST_MESSAGE_AFTER_SECONDS: '5',
        DISPATCH_SWEEP_INTERVAL_MS: '200',
      },
    });
    // Applications until the second's queue lives on another primary than the first's.
    for (let i = 0; apps.length < 2 && i < 8; i += 1) {
      const app = await cluster.createApp(`redis-cluster-${i}`);
      const master = await redis.masterOf(bullName(app.applicationId));
      if (apps.length === 0 || apps[0]!.master !== master) apps.push({ ...app, master });
    }
    for (const [i, app] of apps.entries()) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: app.apiKey,
        PO_INSTANCE_ID: `redis-cluster-${i}`,
        PO_HANDLERS: 'echo',
        PO_CONCURRENCY: '4',
      });
    }
  }, 120_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length)
      console.log(
        `[redis-cluster] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`,
      );
    await cluster?.stop();
    await redis?.stop();
  }, 60_000);

  it('fails over to the replica: every pipeline completes, each stage once, no accepted result lost', async () => {
    expect(apps).toHaveLength(2);
    expect(apps[0]!.master).not.toBe(apps[1]!.master);
    const victim = apps[0]!;
    const started = Date.now();
    let killedAt = 0;
    const accepted: Accepted[] = [];

    const kill = (async () => {
      await sleep(KILL_AFTER_MS);
      killedAt = Date.now();
      const promoted = await redis.killMaster(victim.master, bullName(victim.applicationId));
      console.log(
        `[redis-cluster] SIGKILLed primary ${victim.master} (${bullName(victim.applicationId)}) ${killedAt - started} ms in; ${promoted} promoted ${Date.now() - killedAt} ms later`,
      );
      await redis.restart(victim.master);
      await redis.waitReplicaSynced(victim.master);
      await redis.waitHealthy();
      return promoted;
    })();
    const streams = apps.map((app) => streamEchoPipelines(cluster, app.apiKey, PIPELINES, PACE_MS));
    const byHand = probeWorker(cluster, victim, 'cluster-probe', started + KILL_AFTER_MS + 15_000, accepted);
    const promoted = await kill;
    const ids = await Promise.all(streams);
    await byHand;

    await waitFor(
      'every pipeline terminal',
      async () => ((await unfinishedCount(cluster)) === 0 ? true : undefined),
      60_000,
      500,
    ).catch(() => undefined);
    const firstAfter = accepted.find((a) => a.at > killedAt);
    console.log(
      `[redis-cluster] replica ${promoted} took over; results accepted (202) again ${firstAfter ? firstAfter.at - killedAt : '?'} ms after the kill; ` +
        `${accepted.length} results 202'd by the test's own worker; every pipeline terminal ${Date.now() - killedAt} ms after the kill`,
    );

    const { problems, lostAccepted } = await failoverProblems(cluster, apps.map((app, a) => ({ apiKey: app.apiKey, ids: ids[a]! })), accepted, killedAt);

    expect({
      problems,
      created: ids.map((x) => x.length),
      acceptedAfterKill: accepted.some((a) => a.at > killedAt),
      lostAccepted,
      unready: await unreadyServices(cluster),
    }).toEqual({
      problems: [],
      created: [PIPELINES, PIPELINES],
      acceptedAfterKill: true,
      lostAccepted: [],
      unready: [],
    });
  }, 150_000);
});
