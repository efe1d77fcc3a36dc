import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor, type Reply } from './support/http.js';
import { errorLines, unreadyServices } from './support/pipeline-stream.js';
import { RedisServer } from './support/redis-server.js';

const STAGES = 5;
const HANDLER_MS = 180_000;
const OUTAGE_MS = 90_000;
const PROBE_EVERY_MS = 10_000;
/** A probe not answered within this long hangs: a problem of its own, not a stalled test. */
const ANSWER_WITHIN_MS = 10_000;

function answered(request: Promise<Reply>): Promise<Reply> {
  const hung: Reply = { status: 0, headers: new Headers(), body: `no answer within ${ANSWER_WITHIN_MS} ms` };
  return Promise.race([request, sleep(ANSWER_WITHIN_MS).then(() => hung)]);
}

/**
 * Issue 28, decision 0120: Redis away for 90 s while SDK workers run 3-minute handlers fails
 * nothing. The worker-gateway stays ready (Redis degraded) and keeps serving what needs PostgreSQL
 * only, so the SDK renews its leases through the outage; the pull and the result answer 503 with
 * Retry-After until Redis is back; no lease expires, and every stage completes on its first attempt.
 */
describe('Redis stopped for 90 s while 3-minute handlers run', () => {
  let redis: RedisServer;
  let cluster: Cluster;
  let key: string;
  let applicationId: number;

  beforeAll(async () => {
    redis = await RedisServer.start();
    cluster = await startCluster({ redisUrl: redis.url, replicas: { 'scheduler-service': 0 } });
    ({ apiKey: key, applicationId } = await cluster.createApp('redis-outage'));
    // One slot more than stages: that one keeps pulling through the outage.
    cluster.startWorker('worker', {
      PO_BASE_URL: cluster.apiUrl,
      PO_WORKER_BASE_URL: cluster.workerUrl,
      PO_API_KEY: key,
      PO_INSTANCE_ID: 'redis-outage',
      PO_HANDLERS: 'sleep',
      PO_CONCURRENCY: String(STAGES + 1),
    });
  }, 60_000);

  afterAll(async () => {
    const errors = cluster ? errorLines(cluster) : [];
    if (errors.length) console.log(`[redis-outage] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 5).join('\n')}`);
    await cluster?.stop();
    await redis?.destroy();
  }, 60_000);

  it('keeps leases renewed and PostgreSQL-only routes answering, refuses pull and result with 503, and completes every stage on attempt 1', async () => {
    const headers = { 'x-api-key': key };
    const ids: number[] = [];
    for (let i = 0; i < STAGES; i += 1) {
      const created = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
        json: { idempotencyKey: `long-${i}`, name: `long-${i}`, stages: [{ stageName: 'long', stageHandlerName: 'sleep', input: JSON.stringify({ ms: HANDLER_MS }) }] },
        headers,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      ids.push(created.body.pipeline.id as number);
    }
    // A stage this test runs by hand, for the result's answer during the outage.
    const probe = await handRun(cluster, key, applicationId);

    await waitFor('every long stage Running (its lease held)', async () => {
      const bodies = await Promise.all(ids.map(async (id) => (await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers })).body));
      return bodies.every((b) => b.stages[0].status === 'Running') ? true : undefined;
    }, 30_000, 250);

    await redis.stop();
    const outageEnds = Date.now() + OUTAGE_MS;
    console.log('[redis-outage] Redis stopped');
    const problems: string[] = [];
    const expect2xx = (what: string, r: Reply) => {
      if (r.status < 200 || r.status > 299) problems.push(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    };
    const expectRetryLater = (what: string, r: Reply) => {
      if (r.status !== 503 || r.body?.code !== 'broker_unavailable' || !(Number(r.headers.get('retry-after')) >= 1)) {
        problems.push(`${what}: ${r.status} ${JSON.stringify(r.body)} Retry-After ${r.headers.get('retry-after')}`);
      }
    };
    // The gateways' readiness results are kept 1 s.
    await sleep(1500);
    let probes = 0;
    while (Date.now() < outageEnds - 2000) {
      probes += 1;
      for (const [name, url] of [['worker-gateway', cluster.workerUrl], ['api-gateway', cluster.apiUrl]] as const) {
        const ready = await answered(call(url, 'GET', '/readyz'));
        if (ready.status !== 200 || ready.body.status !== 'degraded') problems.push(`${name} /readyz: ${ready.status} ${JSON.stringify(ready.body)}`);
      }
      expect2xx('GET /pipelines/{id}', await answered(call(cluster.apiUrl, 'GET', `/pipelines/${ids[0]}`, { headers })));
      expect2xx('POST /workers/bootstrap', await answered(call(cluster.workerUrl, 'POST', '/workers/bootstrap', { json: { instanceId: 'outage-bootstrap', handlers: ['sleep'] }, headers })));
      const renewed = await answered(call(cluster.workerUrl, 'POST', `/stages/${probe.stageId}/lease/renew`, { json: { executionId: probe.executionId, workerId: probe.workerId }, headers: probe.headers }));
      expect2xx('POST /stages/{id}/lease/renew', renewed);
      if (renewed.body?.acquired !== true) problems.push(`lease renewal refused: ${JSON.stringify(renewed.body)}`);
      expectRetryLater('POST /jobs/pull', await answered(call(cluster.workerUrl, 'POST', '/jobs/pull', { json: { queue: probe.queue, waitSeconds: 1 }, headers: probe.headers })));
      expectRetryLater('POST /stages/{id}/result', await answered(call(cluster.workerUrl, 'POST', `/stages/${probe.stageId}/result`, { json: probe.result, headers: probe.headers })));
      await sleep(Math.min(PROBE_EVERY_MS, Math.max(0, outageEnds - Date.now())));
    }
    await sleep(Math.max(0, outageEnds - Date.now()));
    // A lease granted before the outage and never renewed would have lapsed 60 s into it.
    const lapsed = await cluster.database.db.$queryRaw<{ id: string }[]>`
      SELECT e.id::text AS id FROM stage_executions e JOIN stages s ON s.id = e.stage_id
      WHERE s.pipeline_id = ANY(${ids.map(BigInt)}::bigint[]) AND e.ended_at IS NULL AND e.lease_expires_at <= now()`;
    await redis.start();
    console.log(`[redis-outage] Redis back after ${OUTAGE_MS / 1000} s; ${probes} rounds of probes`);

    const accepted = await waitFor('the hand-run stage\'s result accepted', async () => {
      const r = await call(cluster.workerUrl, 'POST', `/stages/${probe.stageId}/result`, { json: probe.result, headers: probe.headers });
      return r.status === 202 ? r : undefined;
    }, 30_000, 500);
    expect(accepted.status).toBe(202);

    const finals = await waitFor('every pipeline terminal', async () => {
      const bodies = await Promise.all([...ids, probe.pipelineId].map(async (id) => (await call(cluster.apiUrl, 'GET', `/pipelines/${id}`, { headers })).body));
      return bodies.every((b) => b.isTerminal) ? bodies : undefined;
    }, HANDLER_MS + 30_000, 1000);
    const stages = finals.map((p) => ({ pipeline: p.id, status: p.stages[0].status, attempt: p.stages[0].attempt, lastErrorCode: p.stages[0].lastErrorCode }));
    const [ended] = await cluster.database.db.$queryRaw<{ n: bigint; expired: bigint }[]>`
      SELECT count(*) AS n, count(*) FILTER (WHERE e.end_reason IN ('LEASE_EXPIRED', 'TIMEOUT')) AS expired
      FROM stage_executions e JOIN stages s ON s.id = e.stage_id WHERE s.application_id = ${applicationId}`;

    expect({
      problems,
      lapsedDuringOutage: lapsed.map((r) => r.id),
      stages,
      executions: Number(ended!.n),
      expired: Number(ended!.expired),
      unready: await unreadyServices(cluster),
    }).toEqual({
      problems: [],
      lapsedDuringOutage: [],
      stages: finals.map((p) => ({ pipeline: p.id, status: 'Completed', attempt: 1, lastErrorCode: null })),
      executions: STAGES + 1,
      expired: 0,
      unready: [],
    });
  }, 290_000);
});

/**
 * A one-stage pipeline on a handler no worker serves, pulled and leased by this test as a worker
 * would: the lease it renews and the result it posts during the outage.
 */
async function handRun(cluster: Cluster, key: string, applicationId: number) {
  const headers = { 'x-api-key': key };
  const created = await call(cluster.apiUrl, 'POST', '/pipelines/idempotent', {
    json: { idempotencyKey: 'by-hand', name: 'by-hand', stages: [{ stageName: 'manual', stageHandlerName: 'by-hand' }] },
    headers,
  });
  expect(created.status).toBe(201);
  const session = await call(cluster.workerUrl, 'POST', '/workers/bootstrap', { json: { instanceId: 'outage-probe', handlers: ['by-hand'] }, headers });
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
  // Taken off the queue now: left in flight, it would come back after the visibility timeout and
  // the lost-message walk would look at it, neither of which this test is about.
  await call(cluster.workerUrl, 'POST', '/jobs/ack', { json: { token: pulled.token } });
  return {
    pipelineId: created.body.pipeline.id as number,
    stageId,
    executionId,
    workerId,
    queue,
    headers: workerHeaders,
    result: { stageId, executionId, attempt: 1, isSuccess: true, output: 'by hand' },
  };
}
