import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor, type Reply } from './support/http.js';
import { chartWorkerRouting, nginxAvailability, startNginxFront, type NginxFront } from './support/nginx.js';

/**
 * "Pull and ack must go to the same API process" (api-spec, Worker protocol rule 2) with two
 * worker-gateway processes behind one base URL: a local nginx routed like the Helm chart's Ingress,
 * with the chart's sticky rule read from helm/pipeline-orchestration/values.yaml. Raw HTTP workers
 * send the same headers (X-API-Key and X-Worker-Session) on every call, pull and ack included.
 */
const WORKERS = 100;
const VISIBILITY_TIMEOUT_S = 10;
const HANDLERS = ['sticky', 'roundrobin', 'nosession', 'failover'] as const;
type Handler = (typeof HANDLERS)[number];

interface Worker {
  instanceId: string;
  workerId: string;
  session: string;
  queues: Record<Handler, string>;
}

interface Pulled {
  status: number;
  token?: string;
  stageId?: number;
  executionId?: string;
  messageId?: string;
  upstream: string | null;
  at: number;
}

/** Counts by key (Object.groupBy needs Node 21). */
const countBy = <T>(items: T[], key: (item: T) => string) =>
  items.reduce<Record<string, number>>((acc, item) => ({ ...acc, [key(item)]: (acc[key(item)] ?? 0) + 1 }), {});

if (!nginxAvailability.nginx) console.warn(`[multi-replica] SKIPPED: ${nginxAvailability.reason}`);

describe.skipIf(!nginxAvailability.nginx)('two worker-gateway replicas behind nginx with the chart\'s sticky rule', () => {
  let cluster: Cluster;
  let sticky: NginxFront;
  let roundRobin: NginxFront;
  let key: string;
  let workers: Worker[];
  const routing = chartWorkerRouting();

  const headers = (w: Worker) => ({ 'x-api-key': key, 'x-worker-session': w.session });
  const post = (front: NginxFront, path: string, json: unknown, h: Record<string, string>) => call(front.url, 'POST', path, { json, headers: h });
  // nginx lists every upstream it tried ("dead:port, alive:port" after a failed connect): the
  // last one is the process that answered.
  const upstream = (r: Reply) => r.headers.get('x-upstream-addr')?.split(',').pop()?.trim() ?? null;

  async function pull(front: NginxFront, w: Worker, handler: Handler, waitSeconds: number): Promise<Pulled> {
    const r = await post(front, '/jobs/pull', { queue: w.queues[handler], waitSeconds }, headers(w));
    const p = r.body?.payload;
    if (r.status >= 500) console.log(`[multi-replica] pull answered ${r.status} via ${upstream(r)}: ${JSON.stringify(r.body)}`);
    return { status: r.status, token: r.body?.token, stageId: p?.stageId, executionId: p?.executionId, messageId: r.body?.messageId, upstream: upstream(r), at: Date.now() };
  }

  /** Pulls until a delivery arrives (each worker takes one), or the deadline passes. */
  async function pullOne(front: NginxFront, w: Worker, handler: Handler, timeoutMs = 30_000): Promise<Pulled> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const got = await pull(front, w, handler, 2);
      if (got.status !== 204 || Date.now() > until) return got;
    }
  }

  async function ack(front: NginxFront, w: Worker, token: string) {
    const r = await post(front, '/jobs/ack', { token }, headers(w));
    return { status: r.status, upstream: upstream(r) };
  }

  /** What a worker does with a delivery: lease, result, then ack (api-spec rule 2). */
  async function execute(front: NginxFront, w: Worker, d: Pulled) {
    const lease = await post(front, `/stages/${d.stageId}/lease/acquire`, { executionId: d.executionId, workerId: w.workerId }, headers(w));
    expect(lease.status).toBe(200);
    expect(lease.body).toMatchObject({ acquired: true });
    const result = await post(front, `/stages/${d.stageId}/result`, { stageId: d.stageId, executionId: d.executionId, attempt: lease.body.attempt, isSuccess: true, result: w.instanceId }, headers(w));
    expect(result.status).toBe(202);
    return ack(front, w, d.token!);
  }

  async function createPipelines(handler: Handler, count: number): Promise<number[]> {
    const ids: number[] = [];
    for (let i = 0; i < count; i += 25) {
      const batch = Array.from({ length: Math.min(25, count - i) }, (_, j) =>
        post(sticky, '/pipelines/idempotent', { idempotencyKey: `${handler}-${i + j}`, name: `${handler}-${i + j}`, stages: [{ stageName: 'only', stageHandlerName: handler, input: 'x' }] }, { 'x-api-key': key }),
      );
      for (const r of await Promise.all(batch)) {
        expect(r.status).toBe(201);
        ids.push(r.body.pipeline.id);
      }
    }
    return ids;
  }

  const allCompleted = (ids: number[]) =>
    waitFor(`${ids.length} pipelines Completed`, async () => {
      const statuses = await Promise.all(ids.map(async (id) => (await call(sticky.url, 'GET', `/pipelines/${id}`, { headers: { 'x-api-key': key } })).body.status));
      return statuses.every((s) => s === 'Completed') ? statuses : undefined;
    }, 30_000, 250);

  beforeAll(async () => {
    cluster = await startCluster({
      replicas: { 'worker-gateway': 2 },
      env: { GATEWAY_VISIBILITY_TIMEOUT: String(VISIBILITY_TIMEOUT_S), DISPATCH_SWEEP_INTERVAL_MS: '200', LOG_LEVEL: 'warn' },
    });
    const gateways = [cluster.process('worker-gateway-1').url, cluster.process('worker-gateway-2').url];
    sticky = await startNginxFront({ apiUrl: cluster.apiUrl, workerUrls: gateways, hashOn: routing.hashOn, nginx: nginxAvailability.nginx });
    roundRobin = await startNginxFront({ apiUrl: cluster.apiUrl, workerUrls: gateways, hashOn: null, nginx: nginxAvailability.nginx });
    const app = await cluster.createApp('multi-replica');
    key = app.apiKey;
    workers = await Promise.all(
      Array.from({ length: WORKERS }, async (_, i) => {
        const r = await post(sticky, '/workers/bootstrap', { instanceId: `mr-${i}`, handlers: [...HANDLERS] }, { 'x-api-key': key });
        expect(r.status, `bootstrap via ${upstream(r)}: ${JSON.stringify(r.body)}`).toBe(200);
        const queues = Object.fromEntries(HANDLERS.map((h, j) => [h, r.body.queues[j]])) as Record<Handler, string>;
        expect(queues.sticky).toBe(`app_${app.applicationId}_sticky_StageNext`);
        return { instanceId: `mr-${i}`, workerId: r.body.workerId, session: r.body.sessionToken, queues };
      }),
    );
  }, 120_000);

  afterAll(async () => {
    const errors = cluster?.allLines().filter((l) => /"level":"?(50|60|error|fatal)/.test(l)) ?? [];
    if (errors.length) console.log(`[multi-replica] ${errors.length} error lines from the services, the first:\n${errors.slice(0, 8).join('\n')}`);
    await Promise.all([sticky?.stop(), roundRobin?.stop()]);
    await cluster?.stop();
  });

  it(`uses the chart's rule (${routing.sticky}, ${routing.hashBy}) and its routing table under one base URL`, async () => {
    expect(sticky.config).toContain(routing.hashOn ? `hash ${routing.hashOn} consistent;` : 'round robin');
    expect(roundRobin.config).not.toContain('hash ');
    const api = new URL(cluster.apiUrl).host;
    const reads = await Promise.all(['/workers', '/pipelines/999999', '/version'].map((path) => call(sticky.url, 'GET', path, { headers: { 'x-api-key': key } })));
    for (const r of reads) expect(upstream(r)).toBe(api);
    const resume = await post(sticky, '/stages/999999/resume', { approved: true }, { 'x-api-key': key });
    expect(upstream(resume)).toBe(api);
    const heartbeat = await post(sticky, '/workers/heartbeat', { workerId: workers[0]!.workerId }, headers(workers[0]!));
    expect(heartbeat.status).toBe(200);
    expect(upstream(heartbeat)).not.toBe(api);
  });

  it(`${WORKERS} workers each pull then ack through nginx: zero 404s, both replicas serving`, async () => {
    const ids = await createPipelines('sticky', WORKERS);
    const outcomes = await Promise.all(
      workers.map(async (w) => {
        const d = await pullOne(sticky, w, 'sticky');
        expect(d.status).toBe(200);
        const a = await execute(sticky, w, d);
        return { pulledOn: d.upstream, ackedOn: a.upstream, ack: a.status, ms: Date.now() - d.at };
      }),
    );
    // A 404 here that is not a routing fault would be an ack later than the visibility timeout.
    expect(countBy(outcomes, (o) => String(o.ack))).toEqual({ 200: WORKERS });
    expect(outcomes.every((o) => o.pulledOn === o.ackedOn)).toBe(true);
    const perGateway = countBy(outcomes, (o) => o.pulledOn ?? '?');
    expect(Object.keys(perGateway)).toHaveLength(2);
    for (const served of Object.values(perGateway)) expect(served).toBeGreaterThanOrEqual(10);
    const slowest = Math.max(...outcomes.map((o) => o.ms));
    console.log(`[multi-replica] sticky: ${WORKERS} acks 200; deliveries per gateway ${JSON.stringify(perGateway)}; slowest pull-to-ack ${slowest} ms`);
    await allCompleted(ids);
  });

  it('the same through round-robin routing loses acks: exactly those that reach the other replica get 404', async () => {
    await createPipelines('roundrobin', WORKERS);
    const outcomes = await Promise.all(
      workers.map(async (w) => {
        const d = await pullOne(roundRobin, w, 'roundrobin');
        expect(d.status).toBe(200);
        const a = await ack(roundRobin, w, d.token!);
        return { same: d.upstream === a.upstream, ack: a.status };
      }),
    );
    const notFound = outcomes.filter((o) => o.ack === 404).length;
    console.log(`[multi-replica] round robin: ${notFound} of ${WORKERS} acks answered 404`);
    expect(notFound).toBeGreaterThanOrEqual(10);
    for (const o of outcomes) expect(o.ack).toBe(o.same ? 200 : 404);
  });

  it('a client that sends X-Worker-Session only where the spec requires it (not on pull or ack) is not kept sticky', async () => {
    await createPipelines('nosession', WORKERS);
    const outcomes = await Promise.all(
      workers.map(async (w) => {
        const r = await post(sticky, '/jobs/pull', { queue: w.queues.nosession, waitSeconds: 10 }, { 'x-api-key': key });
        expect(r.status).toBe(200);
        return (await post(sticky, '/jobs/ack', { token: r.body.token }, {})).status;
      }),
    );
    const notFound = outcomes.filter((status) => status === 404).length;
    console.log(`[multi-replica] no session header on pull/ack: ${notFound} of ${WORKERS} acks answered 404 (nginx falls back to round robin on an empty hash key)`);
    expect(notFound).toBeGreaterThanOrEqual(10);
  });

  it('kill -9 of one replica loses no stage: its unacked deliveries come back after the visibility timeout and complete through the other', async () => {
    const COUNT = 20;
    const ids = await createPipelines('failover', COUNT);
    const first = await Promise.all(workers.slice(0, COUNT).map(async (w) => ({ w, d: await pullOne(sticky, w, 'failover') })));
    for (const { d } of first) expect(d.status).toBe(200);
    const [g1, g2] = ['worker-gateway-1', 'worker-gateway-2'].map((label) => cluster.process(label));
    const held = (g: typeof g1) => first.filter(({ d }) => d.upstream === new URL(g!.url).host);
    const [victim, survivor] = held(g1).length >= held(g2).length ? [g1!, g2!] : [g2!, g1!];
    const lost = held(victim);
    expect(lost.length).toBeGreaterThan(0);

    // The survivor's deliveries complete normally; the victim dies holding the others, unacked.
    for (const { w, d } of held(survivor)) expect((await execute(sticky, w, d)).status).toBe(200);
    await victim.kill();

    // The lost deliveries reappear (same message, same execution) once their visibility timeout
    // lapses, served by the survivor through the same front and the same hashing rule.
    const lostByMessage = new Map(lost.map(({ d }) => [d.messageId!, d]));
    const back: Pulled[] = [];
    const survivorHost = new URL(survivor.url).host;
    await Promise.all(
      workers.slice(COUNT, COUNT + lost.length).map(async (w) => {
        const d = await pullOne(sticky, w, 'failover', 30_000);
        expect(d.status).toBe(200);
        expect(d.upstream).toBe(survivorHost);
        expect((await execute(sticky, w, d)).status).toBe(200);
        back.push(d);
      }),
    );
    expect(new Set(back.map((d) => d.messageId))).toEqual(new Set(lostByMessage.keys()));
    for (const d of back) {
      const original = lostByMessage.get(d.messageId!)!;
      expect(d.executionId).toBe(original.executionId);
      expect(d.at - original.at).toBeGreaterThanOrEqual(VISIBILITY_TIMEOUT_S * 1000 - 500);
    }
    console.log(`[multi-replica] failover: ${lost.length} deliveries held by the killed replica came back through the survivor`);
    await allCompleted(ids);
  });
});
