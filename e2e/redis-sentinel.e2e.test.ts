import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { waitFor } from './support/http.js';
import { completionsAround, failoverProblems, probeWorker, streamEchoPipelines, type Accepted } from './support/failover-run.js';
import { errorLines, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';
import { RedisSentinelSet } from './support/redis-sentinel.js';

/** Pipelines, created at this pace across the failover. */
const PIPELINES = 40;
const PACE_MS = 120;
/** The test's own worker takes this long over each stage, so results are in flight at the kill. */
const WORK_MS = 150;
/** The primary is killed this long after the first creation. */
const KILL_AFTER_MS = 1500;

/**
 * Issue 29 item 1: the services reach Redis only through three sentinels (REDIS_URL names a port
 * nothing listens on) with REDIS_MIN_REPLICAS_ACK=1. Pipelines run through an SDK worker and a
 * worker of the test's own; the primary is SIGKILLed mid-run, the sentinels promote the replica,
 * the killed node is started again with its own settings and Sentinel makes it the new primary's
 * replica (until then no result can be confirmed by a replica, so results answer 503 and are sent
 * again). Every pipeline completes, each stage once; every result answered 202 was applied by the
 * execution that sent it, none lost to a lease expiry.
 */
describe('Redis Sentinel: the primary SIGKILLed while pipelines run', () => {
  let redis: RedisSentinelSet;
  let cluster: Cluster;
  let app: { applicationId: number; apiKey: string };

  beforeAll(async () => {
    redis = await RedisSentinelSet.start();
    cluster = await startCluster({
      redisUrl: 'redis://127.0.0.1:1',
      env: {
        ...redis.env,
        REDIS_COMMAND_TIMEOUT_MS: '2000',
        // A delivery whose pull answer was lost in the failover sits active until its visibility timeout.
        GATEWAY_VISIBILITY_TIMEOUT: '8',
        DISPATCH_LOST_MESSAGE_AFTER_SECONDS: '5',
        DISPATCH_SWEEP_INTERVAL_MS: '200',
      },
    });
    app = await cluster.createApp('redis-sentinel');
    cluster.startWorker('worker', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: app.apiKey,
      PO_INSTANCE_ID: 'redis-sentinel',
      PO_HANDLERS: 'echo',
      PO_CONCURRENCY: '4',
    });
  }, 90_000);

  afterAll(async () => {
    if (process.env.PO_E2E_DUMP) for (const s of [...(cluster?.services ?? []), ...(cluster?.workers ?? [])]) console.log(`--- ${s.name}\n${s.lines.filter((l) => !/"level":"?(30|info)/.test(l)).slice(-15).join('\n')}`);
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length)
      console.log(
        `[redis-sentinel] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`,
      );
    await cluster?.stop();
    await redis?.stop();
  }, 60_000);

  it('fails over to the replica: every pipeline completes, each stage once, no accepted result lost', async () => {
    const started = Date.now();
    let killedAt = 0;
    const accepted: Accepted[] = [];

    let promotedAfter = 0;
    let replicaAfter = 0;
    const kill = (async () => {
      await sleep(KILL_AFTER_MS);
      const { killed, promoted, killedAt: at } = await redis.killPrimary();
      killedAt = at;
      promotedAfter = Date.now() - killedAt;
      // Until the killed node is back as the new primary's replica no result can be confirmed by
      // a replica (REDIS_MIN_REPLICAS_ACK=1): results answer 503 and are sent again.
      await redis.restart(killed);
      replicaAfter = Date.now() - killedAt;
      console.log(
        `[redis-sentinel] SIGKILLed primary ${killed} ${killedAt - started} ms in; sentinels promoted ${promoted} ${promotedAfter} ms later; ${killed} restarted as its replica and synced ${replicaAfter} ms after the kill`,
      );
    })();
    const ids = streamEchoPipelines(cluster, app.apiKey, PIPELINES, PACE_MS);
    const byHand = probeWorker(cluster, app, 'sentinel-probe', started + KILL_AFTER_MS + 20_000, accepted, WORK_MS);
    await kill;
    const created = await ids;
    await byHand;

    await waitFor(
      'every pipeline terminal',
      async () => ((await unfinishedCount(cluster)) === 0 ? true : undefined),
      60_000,
      500,
    ).catch(() => undefined);
    // A 202 for a result sent after the kill: one that needed the new primary and its replica.
    const firstAccepted = accepted.find((a) => a.sentAt > killedAt);
    const completions = await completionsAround(cluster, killedAt);
    const ms = (at: number | undefined) => (at === undefined ? '?' : `${at - killedAt} ms`);
    console.log(
      `[redis-sentinel] RECOVERY after SIGKILL of the primary: new primary named by every sentinel ${promotedAfter} ms, ` +
        `first stage leased after the kill completed ${ms(completions.firstLeasedAfter)}, ` +
        `killed node a synced replica again ${replicaAfter} ms, results accepted (202) again ${ms(firstAccepted?.at)}, ` +
        `last stage completed ${ms(completions.last)} (${accepted.length} results 202'd by the test's own worker)`,
    );

    const { problems, lostAccepted } = await failoverProblems(cluster, [{ apiKey: app.apiKey, ids: created }], accepted, killedAt);

    expect({
      problems,
      created: created.length,
      acceptedAfterKill: firstAccepted !== undefined,
      lostAccepted,
      unready: await unreadyServices(cluster),
    }).toEqual({
      problems: [],
      created: PIPELINES,
      acceptedAfterKill: true,
      lostAccepted: [],
      unready: [],
    });
  }, 150_000);

  it('the admin command reaches Redis through the sentinels too', async () => {
    const env = {
      ...process.env,
      DATABASE_URL: cluster.database.url,
      REDIS_URL: 'redis://127.0.0.1:1',
      ...redis.env,
    };
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['services/api-gateway/dist/admin/cli.js', 'results', 'dead-letters', 'list'],
      { env },
    );
    expect(JSON.parse(stdout)).toBeDefined();
  });
});
