import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';

/**
 * Flow control end to end (issue 31, decision 0132), with two replicas of every service and SDK
 * workers on both worker-gateways: a key's limit sampled from the database while workers run, a
 * handler's maxConcurrent across both gateways, priorities under a backlog, a paused handler, and
 * a rate limit across both gateways.
 */
describe('flow control with two replicas of every service', () => {
  let cluster: Cluster;
  let key: string;
  let applicationId: number;
  const api = (method: string, path: string, json?: unknown) => call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': key } });
  const create = async (name: string, handler: string, input: string, options: Record<string, unknown> = {}, priority?: number) => {
    const idempotencyKey = `${name}-${Math.random().toString(36).slice(2)}`;
    const r = await api('POST', '/pipelines/idempotent', { idempotencyKey, name, ...(priority ? { priority } : {}), stages: [{ stageName: 's', stageHandlerName: handler, input, options }] });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.pipeline.id as number;
  };
  const allFinished = (ids: readonly number[], timeoutMs = 90_000) =>
    waitFor(`${ids.length} pipelines terminal`, async () => {
      const rows = await cluster.database.db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pipelines WHERE id = ANY(${ids.map(BigInt)}::bigint[]) AND status IN ('Completed', 'Failed', 'Cancelled')`;
      return rows[0]!.n === ids.length ? true : undefined;
    }, timeoutMs, 250);
  const stages = (ids: readonly number[]) =>
    cluster.database.db.$queryRaw<{ pipeline_id: bigint; status: string; started_at: Date | null }[]>`
      SELECT pipeline_id, status::text AS status, started_at FROM stages WHERE pipeline_id = ANY(${ids.map(BigInt)}::bigint[])`;
  const setHandler = async (name: string, body: Record<string, unknown>) => {
    const r = await api('PUT', `/handlers/${name}`, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { 'api-gateway': 2, 'worker-gateway': 2, 'pipeline-service': 2, 'scheduler-service': 2, 'result-consumer': 2 },
      env: { DISPATCH_SWEEP_INTERVAL_MS: '250' },
    });
    ({ apiKey: key, applicationId } = await cluster.createApp('flow-control'));
    // One worker on each worker-gateway: every limit must hold across both.
    for (const [i, gateway] of ['worker-gateway-1', 'worker-gateway-2'].entries()) {
      cluster.startWorker(`worker-${i + 1}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.process(gateway).url,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `flow-worker-${i + 1}`,
        PO_CONCURRENCY: '8',
        PO_HANDLERS: 'sleep,hold,echo',
      });
      // And one serving `hold` alone, all eight slots long-polling it (maxConcurrent below).
      cluster.startWorker(`hold-worker-${i + 1}`, {
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.process(gateway).url,
        PO_API_KEY: key,
        PO_INSTANCE_ID: `flow-hold-worker-${i + 1}`,
        PO_CONCURRENCY: '8',
        PO_HANDLERS: 'hold',
      });
    }
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it("a key's limit is never exceeded while workers run (sampled from the database), and every stage completes", async () => {
    let maxA = 0;
    let maxB = 0;
    let samples = 0;
    let done = false;
    const sampling = (async () => {
      while (!done) {
        const rows = await cluster.database.db.$queryRaw<{ key: string; n: number }[]>`
          SELECT concurrency_key AS key, count(*)::int AS n FROM stages
          WHERE application_id = ${applicationId} AND status IN ('Pending', 'Running') AND concurrency_key IN ('tenant-a', 'tenant-b') GROUP BY 1`;
        maxA = Math.max(maxA, rows.find((r) => r.key === 'tenant-a')?.n ?? 0);
        maxB = Math.max(maxB, rows.find((r) => r.key === 'tenant-b')?.n ?? 0);
        samples += 1;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    // Sampling starts before the first creation: on a loaded box most of the work can run while
    // the 34 pipelines are still being created one by one.
    const ids: number[] = [];
    try {
      for (let i = 0; i < 24; i += 1) ids.push(await create(`key-a-${i}`, 'sleep', '{"ms":200}', { concurrencyKey: 'tenant-a', concurrencyLimit: 3 }));
      for (let i = 0; i < 10; i += 1) ids.push(await create(`key-b-${i}`, 'sleep', '{"ms":200}', { concurrencyKey: 'tenant-b' }));
      await allFinished(ids);
    } finally {
      done = true;
      await sampling;
    }
    // 24 stages of 200 ms three at a time take at least 1.6 s: the sampler saw them run.
    expect(samples).toBeGreaterThan(10);
    expect(maxA).toBe(3);
    expect(maxB).toBe(1);
    expect((await stages(ids)).every((s) => s.status === 'Completed')).toBe(true);
  }, 120_000);

  it("a handler's maxConcurrent holds across both worker-gateways: never more than 12 handlers at once, and 12 at times", async () => {
    // Twelve places, more than the pulls one gateway's workers have on `hold` (8 + a few): only
    // both gateways together can fill them, so the limit is held across both, not within one. The
    // stages wait paused and are released at once, so the places fill whatever the creation pace.
    await setHandler('hold', { paused: true, maxConcurrent: 12 });
    const ids: number[] = [];
    try {
      for (let i = 0; i < 48; i += 1) ids.push(await create(`max-${i}`, 'hold', '{"ms":400}'));
      await setHandler('hold', { paused: false });
      await allFinished(ids);
    } finally {
      await setHandler('hold', { paused: false, maxConcurrent: null });
    }
    // A handler runs from its lease for at least its 400 ms, and its place is handed on only after
    // the ack that follows: at any instant, the leases of the last 400 ms are at least the handlers
    // delivered and not yet acknowledged. All times are the database's.
    const leases = await cluster.database.db.$queryRaw<{ at: number; owner: string }[]>`
      SELECT extract(epoch FROM e.leased_at) * 1000 AS at, e.lease_owner AS owner
      FROM stage_executions e JOIN stages s ON s.id = e.stage_id
      WHERE s.pipeline_id = ANY(${ids.map(BigInt)}::bigint[]) AND e.leased_at IS NOT NULL`;
    const starts = leases.map((l) => Number(l.at)).sort((a, b) => a - b);
    const mostAtOnce = Math.max(...starts.map((t) => starts.filter((u) => u <= t && u > t - 400).length));
    expect(mostAtOnce).toBe(12);
    expect((await stages(ids)).every((s) => s.status === 'Completed')).toBe(true);
  }, 120_000);

  it('priorities are honoured under a backlog: the urgent stages start before the older normal ones still waiting', async () => {
    await setHandler('hold', { maxConcurrent: 2 });
    const normal: number[] = [];
    for (let i = 0; i < 10; i += 1) normal.push(await create(`normal-${i}`, 'hold', '{"ms":300}', {}, 5));
    const createdUrgentAt = new Date();
    const urgent: number[] = [];
    for (let i = 0; i < 4; i += 1) urgent.push(await create(`urgent-${i}`, 'hold', '{"ms":300}', { priority: 1 }));
    await allFinished([...normal, ...urgent]);
    const rows = await stages([...normal, ...urgent]);
    const startOf = (id: number) => rows.find((r) => Number(r.pipeline_id) === id)!.started_at!.getTime();
    const lastUrgentStart = Math.max(...urgent.map(startOf));
    // Normal stages that were still waiting when the urgent ones arrived started after all of them.
    const waitingNormals = normal.filter((id) => startOf(id) > createdUrgentAt.getTime() + 100);
    expect(waitingNormals.length).toBeGreaterThanOrEqual(4);
    for (const id of waitingNormals) expect(startOf(id)).toBeGreaterThanOrEqual(lastUrgentStart);
    await setHandler('hold', { maxConcurrent: null });
  }, 120_000);

  it('a paused handler gets no deliveries until resumed: running stages finish, its stages wait visibly', async () => {
    const running = [await create('pause-running-1', 'hold', '{"ms":2000}'), await create('pause-running-2', 'hold', '{"ms":2000}')];
    await waitFor('the holds to run', async () => ((await stages(running)).every((s) => s.status === 'Running') ? true : undefined), 20_000);
    const paused = await setHandler('hold', { paused: true });
    expect(paused).toMatchObject({ name: 'hold', paused: true });
    const waiting: number[] = [];
    for (let i = 0; i < 5; i += 1) waiting.push(await create(`paused-${i}`, 'hold', '{"ms":10}'));
    await allFinished(running, 20_000);
    await new Promise((r) => setTimeout(r, 3000));
    const held = await stages(waiting);
    expect(held.map((s) => s.status)).toEqual(['Throttled', 'Throttled', 'Throttled', 'Throttled', 'Throttled']);
    expect(held.every((s) => s.started_at === null)).toBe(true);
    const view = (await api('GET', '/handlers/hold')).body;
    expect(view).toMatchObject({ paused: true, backlog: 5, running: 0 });
    await setHandler('hold', { paused: false });
    await allFinished(waiting, 30_000);
    expect((await stages(waiting)).every((s) => s.status === 'Completed')).toBe(true);
  }, 120_000);

  it('a rate limit of 5/s holds within 10% over 20 s across two worker-gateways', async () => {
    await setHandler('echo', { maxPerSecond: 5 });
    const ids: number[] = [];
    for (let i = 0; i < 130; i += 1) ids.push(await create(`rate-${i}`, 'echo', `r${i}`));
    await waitFor('22 s of deliveries', async () => {
      const rows = await cluster.database.db.$queryRaw<{ span: number }[]>`
        SELECT extract(epoch FROM max(e.leased_at) - min(e.leased_at))::float8 AS span FROM stage_executions e
        JOIN stages s ON s.id = e.stage_id WHERE s.pipeline_id = ANY(${ids.map(BigInt)}::bigint[]) AND e.leased_at IS NOT NULL`;
      return (rows[0]?.span ?? 0) >= 22 ? true : undefined;
    }, 60_000, 500);
    const [window] = await cluster.database.db.$queryRaw<{ n: number; gateways: number }[]>`
      WITH leased AS (
        SELECT e.leased_at, e.lease_owner FROM stage_executions e JOIN stages s ON s.id = e.stage_id
        WHERE s.pipeline_id = ANY(${ids.map(BigInt)}::bigint[]) AND e.leased_at IS NOT NULL
      ), first AS (SELECT min(leased_at) AS t0 FROM leased)
      SELECT count(*)::int AS n, count(DISTINCT lease_owner)::int AS gateways FROM leased, first
      WHERE leased_at >= t0 + interval '1 second' AND leased_at < t0 + interval '21 seconds'`;
    // 20 s at 5/s after the first second (the bucket's one-second burst).
    expect(window!.n).toBeGreaterThanOrEqual(90);
    expect(window!.n).toBeLessThanOrEqual(110);
    // Both workers (one per worker-gateway) took deliveries.
    expect(window!.gateways).toBe(2);
    await setHandler('echo', { maxPerSecond: null });
    await allFinished(ids, 60_000);
  }, 150_000);
});
