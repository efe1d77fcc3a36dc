import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor, type Reply } from './support/http.js';
import { STREAM_HANDLERS, createStream, errorLines, streamProblems, unreadyServices } from './support/pipeline-stream.js';
import { RedisServer } from './support/redis-server.js';

/** Pipelines created before the freeze (running when it starts), and as many during it. */
const PIPELINES = 15;
const PACE_MS = 250;
const FREEZE_MS = 20_000;
const COMMAND_TIMEOUT_MS = 2000;
/**
 * From the freeze on, a pull may still wait on a fetch the gateway sent before it knew: after this
 * long it must be refused. Generous on purpose (a command timeout and a watch interval are ~3 s).
 */
const PULL_REFUSED_AFTER_MS = 8000;
/** A probe not answered within this long hangs: a problem of its own, not a slow answer. */
const ANSWER_WITHIN_MS = 12_000;
/**
 * A transaction of ours that holds row locks this long during the freeze waits on Redis inside it.
 * The statement budget (DATABASE_STATEMENT_TIMEOUT_MS) is longer; no transaction should come near.
 */
const LOCK_HELD_LIMIT_MS = 5000;
const SERVICES = ['api-gateway', 'worker-gateway', 'pipeline-service', 'scheduler-service', 'result-consumer'];

function answered(request: Promise<Reply>): Promise<Reply & { ms: number }> {
  const started = Date.now();
  const hung: Reply = { status: 0, headers: new Headers(), body: `no answer within ${ANSWER_WITHIN_MS} ms` };
  return Promise.race([request.catch((err: unknown) => ({ status: -1, headers: new Headers(), body: String(err) })), sleep(ANSWER_WITHIN_MS).then(() => hung)]).then((r) => ({
    ...r,
    ms: Date.now() - started,
  }));
}

/**
 * Issue 29 item 4: a Redis that stops answering without closing its connections (SIGSTOP) for 20 s
 * while pipelines stream through SDK workers. Every connection has a command timeout
 * (REDIS_COMMAND_TIMEOUT_MS, 2 s here), so during the freeze the routes that need Redis answer 503
 * broker_unavailable with Retry-After instead of hanging (the pull, the result); a creation
 * commits and answers 201 without its publish (decision 0121: the lost-message walk delivers it);
 * no transaction of the services holds row locks while it waits on Redis; after SIGCONT every
 * pipeline completes, with each result applied once.
 */
describe('Redis frozen (SIGSTOP) for 20 s while pipelines run', () => {
  let redis: RedisServer;
  let cluster: Cluster;
  let key: string;
  let applicationId: number;

  beforeAll(async () => {
    redis = await RedisServer.start();
    cluster = await startCluster({
      redisUrl: redis.url,
      env: {
        REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS),
        // A fetch that timed out may still have taken its message when Redis runs it after the
        // freeze: its lock lapses after the visibility timeout and the stalled check returns it.
        GATEWAY_VISIBILITY_TIMEOUT: '5',
        DISPATCH_LOST_MESSAGE_AFTER_SECONDS: '5',
        DISPATCH_SWEEP_INTERVAL_MS: '200',
      },
    });
    ({ apiKey: key, applicationId } = await cluster.createApp('redis-freeze'));
    for (const i of [1, 2]) {
      cluster.startWorker(`worker-${i}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `redis-freeze-${i}`,
        PO_HANDLERS: STREAM_HANDLERS,
        PO_CONCURRENCY: '4',
      });
    }
  }, 90_000);

  afterAll(async () => {
    redis?.thaw();
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[redis-freeze] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
    await redis?.destroy();
  }, 60_000);

  it('answers pull and result 503 with Retry-After, creates without holding locks, and completes every pipeline once Redis answers again', async () => {
    const headers = { 'x-api-key': key };
    const probe = await handRun(cluster, key, applicationId);
    // A pipeline no worker serves, cancelled during the freeze.
    const toCancel = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
      json: { idempotencyKey: 'to-cancel', name: 'to-cancel', stages: [{ stageName: 'idle', stageHandlerName: 'nobody' }] },
      headers,
    });
    expect(toCancel.status).toBe(201);
    const before = await createStream(cluster, key, 'before', PIPELINES, PACE_MS);
    // The api-gateway's first passes are done by now, so the first creation of the freeze finds it
    // idle; the pipelines' later stages are still running.
    await sleep(300);

    redis.freeze();
    const frozenAt = Date.now();
    const thawAt = frozenAt + FREEZE_MS;
    console.log('[redis-freeze] Redis frozen (SIGSTOP)');
    const problems: string[] = [];
    const heldLocks: string[] = [];
    const answers: string[] = [];
    const retryLater = (r: Reply) => r.status === 503 && r.body?.code === 'broker_unavailable' && Number(r.headers.get('retry-after')) >= 1;

    const sampling = sampleLocks(cluster, thawAt, heldLocks);
    // Creations during the freeze commit and are answered 201 without waiting for Redis to come
    // back (decision 0121: the lost-message walk publishes what could not be). The first finds the
    // api-gateway idle and runs its pass in its own transaction (decision 0106), the stream's then
    // share batched passes.
    const createDuringFreeze = async (label: string) => {
      const r = await answered(
        call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
          json: { idempotencyKey: label, name: label, stages: [{ stageName: 'only', stageHandlerName: 'echo', input: label }] },
          headers,
        }),
      );
      answers.push(`POST /pipelines (${label}) ${r.status} in ${r.ms} ms`);
      if (r.status !== 201) problems.push(`POST /pipelines (${label}) during the freeze: ${r.status} ${JSON.stringify(r.body)}`);
      return r.status === 201 ? (r.body.pipeline.id as number) : undefined;
    };
    const createdDuringFreeze = createDuringFreeze('when-idle');
    // A change that announces itself commits and answers: the announcement is best effort (the sweep catches up).
    const cancelled = sleep(2000).then(async () => {
      const r = await answered(call(cluster.apiUrl, 'POST', `/pipelines/${toCancel.body.pipeline.id}/cancel`, { headers }));
      answers.push(`POST /pipelines/{id}/cancel ${r.status} in ${r.ms} ms`);
      if (r.status !== 200 || r.body?.status !== 'Cancelled') problems.push(`POST /pipelines/{id}/cancel during the freeze: ${r.status} ${JSON.stringify(r.body)}`);
    });
    const creating = sleep(1000).then(() => createStream(cluster, key, 'during', PIPELINES, PACE_MS));
    creating.catch(() => undefined); // awaited below, unless an earlier step failed

    let refusedPulls = 0;
    while (Date.now() < thawAt - 3000) {
      const since = Date.now() - frozenAt;
      const pulled = await answered(call(cluster.workerUrl, 'POST', '/jobs/pull', { json: { queue: probe.queue, waitSeconds: 1 }, headers: probe.headers }));
      answers.push(`pull +${since} ms: ${pulled.status} in ${pulled.ms} ms`);
      if (retryLater(pulled)) refusedPulls += 1;
      else if (pulled.status <= 0 || pulled.status >= 500 || (since >= PULL_REFUSED_AFTER_MS && pulled.status !== 503)) {
        problems.push(`POST /jobs/pull +${since} ms: ${pulled.status} ${JSON.stringify(pulled.body)} Retry-After ${pulled.headers.get('retry-after')}`);
      }
      const result = await answered(call(cluster.workerUrl, 'POST', `/stages/${probe.stageId}/result`, { json: probe.result, headers: probe.headers }));
      answers.push(`result +${Date.now() - frozenAt} ms: ${result.status} in ${result.ms} ms`);
      if (!retryLater(result)) problems.push(`POST /stages/{id}/result +${since} ms: ${result.status} ${JSON.stringify(result.body)} Retry-After ${result.headers.get('retry-after')}`);
      // The dashboard's overview reads the queue depths from Redis.
      const overview = await answered(call(cluster.apiUrl, 'GET', '/overview', { headers }));
      answers.push(`overview ${overview.status} in ${overview.ms} ms`);
      if (!retryLater(overview)) problems.push(`GET /overview +${since} ms: ${overview.status} ${JSON.stringify(overview.body)} Retry-After ${overview.headers.get('retry-after')}`);
      await sleep(1000);
    }
    const duringIds = [await createdDuringFreeze].filter((id): id is number => id !== undefined);
    await cancelled;
    await sleep(Math.max(0, thawAt - Date.now()));
    await sampling;
    redis.thaw();
    const thawedAt = Date.now();
    console.log(`[redis-freeze] Redis thawed (SIGCONT) after ${thawedAt - frozenAt} ms; answers during the freeze: ${answers.join('; ')}`);

    const accepted = await waitFor('the hand-run stage\'s result accepted', async () => {
      const r = await call(cluster.workerUrl, 'POST', `/stages/${probe.stageId}/result`, { json: probe.result, headers: probe.headers });
      return r.status === 202 ? r : undefined;
    }, 30_000, 500);
    expect(accepted.status).toBe(202);

    const during = await creating;
    const streamed = [...(await streamProblems(cluster, key, before, 45_000)), ...(await streamProblems(cluster, key, during, 10_000))];
    const others = await waitFor('the pipelines made by hand terminal', async () => {
      const bodies = await Promise.all([probe.pipelineId, ...duringIds].map(async (id) => (await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers })).body));
      return bodies.every((b) => b.isTerminal) ? bodies : undefined;
    }, 30_000, 500).catch(() => []);
    console.log(`[redis-freeze] ${before.length + during.length} streamed pipelines and ${others.length} made by hand settled ${Date.now() - thawedAt} ms after the thaw`);
    const handMade = await Promise.all(
      [probe.pipelineId, ...duringIds].map(async (id) => {
        const [row] = await cluster.database.db.$queryRaw<{ status: string; executions: bigint; results: bigint }[]>`
          SELECT p.status, count(e.id) AS executions, count(e.id) FILTER (WHERE e.end_reason = 'result') AS results
          FROM pipelines p JOIN stages s ON s.pipeline_id = p.id LEFT JOIN stage_executions e ON e.stage_id = s.id
          WHERE p.id = ${id} GROUP BY p.status`;
        return { status: row?.status, executions: Number(row?.executions), results: Number(row?.results) };
      }),
    );

    expect({
      problems,
      refusedPulls: refusedPulls > 0,
      heldLocks,
      created: [before.length, during.length],
      streamed,
      handMade,
      unready: await unreadyServices(cluster),
    }).toEqual({
      problems: [],
      refusedPulls: true,
      heldLocks: [],
      created: [PIPELINES, PIPELINES],
      streamed: [],
      handMade: [probe.pipelineId, ...duringIds].map(() => ({ status: 'Completed', executions: 1, results: 1 })),
      unready: [],
    });
  }, 150_000);
});

/**
 * Every 250 ms until `until`: transactions of the services open longer than LOCK_HELD_LIMIT_MS that
 * hold a transaction id (they wrote or locked rows), and lock waits that long.
 */
async function sampleLocks(cluster: Cluster, until: number, found: string[]): Promise<void> {
  const seen = new Set<string>();
  while (Date.now() < until) {
    const rows = await cluster.database.db.$queryRaw<{ pid: number; app: string; state: string; open_ms: number; waiting: boolean; query: string }[]>`
      SELECT a.pid, a.application_name AS app, a.state,
             (extract(epoch FROM clock_timestamp() - a.xact_start) * 1000)::float8 AS open_ms,
             a.wait_event_type IS NOT DISTINCT FROM 'Lock' AS waiting, left(a.query, 160) AS query
      FROM pg_stat_activity a
      WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.application_name = ANY(${SERVICES}::text[])
        AND a.xact_start < clock_timestamp() - make_interval(secs => ${LOCK_HELD_LIMIT_MS / 1000}::float8)
        AND (a.wait_event_type IS NOT DISTINCT FROM 'Lock'
             OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND l.locktype = 'transactionid'))`;
    for (const r of rows) {
      const id = `${r.pid}:${r.query}`;
      if (seen.has(id)) continue;
      seen.add(id);
      found.push(`${r.app} pid ${r.pid} ${r.state}${r.waiting ? ' (waiting on a lock)' : ''}, transaction open ${Math.round(r.open_ms)} ms: ${r.query}`);
    }
    await sleep(250);
  }
}

/**
 * A one-stage pipeline on a handler no worker serves, pulled and leased by this test as a worker
 * would: the pull and the result it sends during the freeze.
 */
async function handRun(cluster: Cluster, key: string, applicationId: number) {
  const headers = { 'x-api-key': key };
  const created = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
    json: { idempotencyKey: 'by-hand', name: 'by-hand', stages: [{ stageName: 'manual', stageHandlerName: 'by-hand' }] },
    headers,
  });
  expect(created.status).toBe(201);
  const session = await call(cluster.workerUrl, 'POST', '/workers/bootstrap', { json: { instanceId: 'freeze-probe', handlers: ['by-hand'] }, headers });
  expect(session.status).toBe(200);
  const workerHeaders = { ...headers, 'x-worker-session': session.body.sessionToken as string };
  const queue = `app_${applicationId}_by-hand_StageNext`;
  const pulled = await waitFor('the hand-run stage delivered', async () => {
    const r = await call(cluster.workerUrl, 'POST', '/jobs/pull', { json: { queue, waitSeconds: 5 }, headers: workerHeaders });
    return r.status === 200 ? r.body : undefined;
  }, 20_000, 100);
  const { stageId, executionId } = pulled.payload as { stageId: number; executionId: string };
  const workerId = session.body.workerId as string;
  const lease = await call(cluster.workerUrl, 'POST', `/stages/${stageId}/lease/acquire`, { json: { executionId, workerId }, headers: workerHeaders });
  expect(lease.body).toMatchObject({ acquired: true, attempt: 1 });
  // Taken off the queue now: left in flight, it would come back after the visibility timeout.
  await call(cluster.workerUrl, 'POST', '/jobs/ack', { json: { token: pulled.token } });
  return {
    pipelineId: created.body.pipeline.id as number,
    stageId,
    queue,
    headers: workerHeaders,
    result: { stageId, executionId, attempt: 1, isSuccess: true, output: 'by hand' },
  };
}
