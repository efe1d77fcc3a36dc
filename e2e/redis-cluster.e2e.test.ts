import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import { errorLines, unfinishedCount, unreadyServices } from './support/pipeline-stream.js';
import { RedisCluster } from './support/redis-cluster.js';

/** Pipelines per application, created at this pace across the failover. */
const PIPELINES = 24;
const PACE_MS = 150;
/** The primary is killed this long after the first creation. */
const KILL_AFTER_MS = 1500;
const STAGES = ['first', 'middle', 'last'];

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
  }, 90_000);

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
    const accepted: { stageId: number; at: number }[] = [];

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
    const streams = apps.map((app) => stream(cluster, app.apiKey, app.applicationId));
    const byHand = handWorker(cluster, victim, started + KILL_AFTER_MS + 15_000, accepted);
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

    const problems: string[] = [];
    const rows = await cluster.database.db.$queryRaw<
      { stage_id: bigint; status: string; ends: (string | null)[] }[]
    >`
      SELECT s.id AS stage_id, s.status, array_agg(e.end_reason ORDER BY e.dispatched_at) FILTER (WHERE e.id IS NOT NULL) AS ends
      FROM stages s LEFT JOIN stage_executions e ON e.stage_id = s.id GROUP BY s.id`;
    const stages = new Map(rows.map((r) => [Number(r.stage_id), r]));
    for (const [a, app] of apps.entries()) {
      for (const [i, id] of ids[a]!.entries()) {
        const p = (
          await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, {
            headers: { 'x-api-key': app.apiKey },
          })
        ).body;
        const where = `app ${app.applicationId} pipeline ${id} (#${i})`;
        if (p.status !== 'Completed') {
          problems.push(
            `${where} is ${p.status}: ${p.stages.map((s: { id: number; name: string; status: string; attempt: number }) => `${s.name}:${s.status}#${s.attempt} ${JSON.stringify(stages.get(s.id)?.ends)}`).join(' ')}`,
          );
          continue;
        }
        p.stages.forEach(
          (s: { id: number; name: string; output: string; logs: { message: string }[] }) => {
            const ends = stages.get(s.id)?.ends ?? [];
            if (s.output !== `${s.name}-${i}`)
              problems.push(`${where} stage ${s.name}: output ${JSON.stringify(s.output)}`);
            // One execution, ended by its one result: nothing lost (no lease expiry, no second run) and nothing applied twice.
            if (JSON.stringify(ends) !== '["result"]')
              problems.push(`${where} stage ${s.name}: executions ended ${JSON.stringify(ends)}`);
            if (s.logs.filter((l) => l.message.startsWith('echoing')).length > 1)
              problems.push(`${where} stage ${s.name}: result applied more than once`);
          },
        );
      }
    }
    const lostAccepted = accepted
      .map((a) => ({ ...a, row: stages.get(a.stageId) }))
      .filter((a) => a.row?.status !== 'Completed' || a.row.ends.includes('LEASE_EXPIRED'))
      .map(
        (a) =>
          `stage ${a.stageId} 202'd at +${a.at - killedAt} ms: ${a.row?.status} ${JSON.stringify(a.row?.ends)}`,
      );

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

/** PIPELINES three-stage echo pipelines, creations retried (same idempotency key) while the cluster fails over. */
async function stream(cluster: Cluster, apiKey: string, applicationId: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < PIPELINES; i += 1) {
    const stages = STAGES.map((name) => ({
      stageName: name,
      stageHandlerName: 'echo',
      input: `${name}-${i}`,
    }));
    const [id] = await Promise.all([
      waitFor(
        `creation of ${applicationId}-${i}`,
        async () => {
          const r = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
            json: { idempotencyKey: `p-${i}`, name: `p-${i}`, stages },
            headers: { 'x-api-key': apiKey },
          });
          return r.status === 200 || r.status === 201 ? (r.body.pipeline.id as number) : undefined;
        },
        30_000,
        200,
      ),
      sleep(PACE_MS),
    ]);
    ids.push(id);
  }
  return ids;
}

/**
 * A worker of the test's own on the victim's queue beside the SDK worker: pull, lease, ack, result
 * (the echo's output), until `until`. Every result answered 202 is recorded with its time.
 */
async function handWorker(
  cluster: Cluster,
  app: { apiKey: string; applicationId: number },
  until: number,
  accepted: { stageId: number; at: number }[],
): Promise<void> {
  const headers = { 'x-api-key': app.apiKey };
  const session = await call(cluster.workerUrl, 'POST', '/workers/bootstrap', {
    json: { instanceId: 'cluster-probe', handlers: ['echo'] },
    headers,
  });
  expect(session.status).toBe(200);
  const workerHeaders = { ...headers, 'x-worker-session': session.body.sessionToken as string };
  const workerId = session.body.workerId as string;
  const queue = `app_${app.applicationId}_echo_StageNext`;
  const attempt = async <T>(f: () => Promise<T>): Promise<T | undefined> =>
    f().catch(() => undefined);
  while (Date.now() < until) {
    const pulled = await attempt(() =>
      call(cluster.workerUrl, 'POST', '/jobs/pull', {
        json: { queue, waitSeconds: 1 },
        headers: workerHeaders,
      }),
    );
    if (pulled?.status !== 200) {
      await sleep(100);
      continue;
    }
    const { stageId, executionId, input } = pulled.body.payload as {
      stageId: number;
      executionId: string;
      input: string;
    };
    const lease = await attempt(() =>
      call(cluster.workerUrl, 'POST', `/stages/${stageId}/lease/acquire`, {
        json: { executionId, workerId },
        headers: workerHeaders,
      }),
    );
    await attempt(() =>
      call(cluster.workerUrl, 'POST', '/jobs/ack', { json: { token: pulled.body.token } }),
    );
    if (!lease?.body?.acquired) continue;
    const result = {
      stageId,
      executionId,
      attempt: lease.body.attempt as number,
      isSuccess: true,
      result: input,
    };
    // Retried like an SDK worker: a 503 during the failover is sent again.
    await waitFor(
      `result of stage ${stageId}`,
      async () => {
        const r = await attempt(() =>
          call(cluster.workerUrl, 'POST', `/stages/${stageId}/result`, {
            json: result,
            headers: workerHeaders,
          }),
        );
        if (r?.status === 202) accepted.push({ stageId, at: Date.now() });
        return r && r.status < 500 ? r : undefined;
      },
      20_000,
      200,
    ).catch(() => undefined);
  }
}
