import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './support/cluster.js';
import { nginxAvailability, startNginxFront, type NginxFront } from './support/nginx.js';

/**
 * In-cluster workers reach the worker-gateway through its Service, which kube-proxy balances per
 * connection (issue 30 item 4, decision 0129). The chart sets `sessionAffinity: ClientIP`: every
 * new connection from one pod IP goes to the same pod. Modelled here with a local nginx in front of
 * two worker-gateway processes: round robin for a Service without affinity, `hash $remote_addr
 * consistent` for ClientIP. Worker "pods" are loopback addresses (127.0.0.11 on), each the source
 * address of its workers' connections, with its own keep-alive pool as an HTTP client has.
 */
const PODS = 20;
const WORKERS_PER_POD = 5;
const WORKERS = PODS * WORKERS_PER_POD;

interface Worker {
  pod: string;
  agent: Agent;
  session: string;
  queues: Record<'roundrobin' | 'affinity', string>;
}

interface Reply {
  status: number;
  upstream: string | null;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- e2e tests read arbitrary JSON
  body: any;
}

/** One call from a worker pod: its source address and its connection pool. */
function callFrom(w: Pick<Worker, 'pod' | 'agent'>, base: string, path: string, json: unknown, headers: Record<string, string>): Promise<Reply> {
  const body = JSON.stringify(json);
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', agent: w.agent, localAddress: w.pod, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        const upstream = String(res.headers['x-upstream-addr'] ?? '').split(',').pop()?.trim() || null;
        resolve({ status: res.statusCode ?? 0, upstream, body: text ? JSON.parse(text) : null });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A hundred workers at once can meet the database's statement budget on a loaded box: 503 with
 * Retry-After is the documented answer, and a worker retries it as the SDKs do.
 */
async function callRetrying(w: Pick<Worker, 'pod' | 'agent'>, base: string, path: string, json: unknown, headers: Record<string, string>): Promise<Reply> {
  for (let attempt = 1; ; attempt++) {
    const r = await callFrom(w, base, path, json, headers);
    if (r.status !== 503 || attempt === 5) return r;
    await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
  }
}

const countBy = <T>(items: T[], key: (item: T) => string) => items.reduce<Record<string, number>>((acc, item) => ({ ...acc, [key(item)]: (acc[key(item)] ?? 0) + 1 }), {});

if (!nginxAvailability.nginx) console.warn(`[in-cluster] SKIPPED: ${nginxAvailability.reason}`);

describe.skipIf(!nginxAvailability.nginx)('in-cluster workers through the worker-gateway Service: round robin vs client-IP affinity', () => {
  let cluster: Cluster;
  let roundRobin: NginxFront;
  let clientIp: NginxFront;
  let key: string;
  let workers: Worker[];

  beforeAll(async () => {
    cluster = await startCluster({ replicas: { 'worker-gateway': 2 }, env: { GATEWAY_VISIBILITY_TIMEOUT: '10', LOG_LEVEL: 'warn' } });
    const gateways = [cluster.process('worker-gateway-1').url, cluster.process('worker-gateway-2').url];
    roundRobin = await startNginxFront({ apiUrl: cluster.apiUrl, workerUrls: gateways, hashOn: null, nginx: nginxAvailability.nginx });
    clientIp = await startNginxFront({ apiUrl: cluster.apiUrl, workerUrls: gateways, hashOn: '$remote_addr', nginx: nginxAvailability.nginx });
    key = (await cluster.createApp('in-cluster')).apiKey;
    const pods = Array.from({ length: PODS }, (_, i) => ({ pod: `127.0.0.${11 + i}`, agent: new Agent({ keepAlive: true }) }));
    workers = await Promise.all(
      Array.from({ length: WORKERS }, async (_, i) => {
        const pod = pods[i % PODS]!;
        const r = await callRetrying(pod, clientIp.url, '/workers/bootstrap', { instanceId: `ic-${i}`, handlers: ['roundrobin', 'affinity'] }, { 'x-api-key': key });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return { ...pod, session: r.body.sessionToken, queues: { roundrobin: r.body.queues[0], affinity: r.body.queues[1] } };
      }),
    );
  }, 120_000);

  afterAll(async () => {
    for (const w of workers ?? []) w.agent.destroy();
    await Promise.all([roundRobin?.stop(), clientIp?.stop()]);
    await cluster?.stop();
  });

  async function createPipelines(handler: string): Promise<void> {
    for (let i = 0; i < WORKERS; i += 25) {
      const batch = Array.from({ length: 25 }, (_, j) =>
        fetch(`${cluster.apiUrl}/pipelines/idempotent`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: JSON.stringify({ idempotencyKey: `${handler}-${i + j}`, name: `${handler}-${i + j}`, stages: [{ stageName: 'only', stageHandlerName: handler, input: 'x' }] }),
        }),
      );
      for (const r of await Promise.all(batch)) expect(r.status).toBe(201);
    }
  }

  /** Every worker pulls one delivery then acks it through `front`; returns what each ack answered. */
  async function pullThenAck(front: NginxFront, handler: keyof Worker['queues']) {
    await createPipelines(handler);
    return Promise.all(
      workers.map(async (w) => {
        const headers = { 'x-api-key': key, 'x-worker-session': w.session };
        let pulled: Reply;
        do pulled = await callRetrying(w, front.url, '/jobs/pull', { queue: w.queues[handler], waitSeconds: 2 }, headers);
        while (pulled.status === 204);
        expect(pulled.status).toBe(200);
        const acked = await callRetrying(w, front.url, '/jobs/ack', { token: pulled.body.token }, headers);
        return { pod: w.pod, pulledOn: pulled.upstream, ackedOn: acked.upstream, ack: acked.status };
      }),
    );
  }

  it(`round robin per connection (a Service without affinity) loses the acks that reach the other replica`, async () => {
    const outcomes = await pullThenAck(roundRobin, 'roundrobin');
    const lost = outcomes.filter((o) => o.ack === 404).length;
    console.log(`[in-cluster] round robin: ${lost} of ${WORKERS} acks answered 404`);
    for (const o of outcomes) expect(o.ack).toBe(o.pulledOn === o.ackedOn ? 200 : 404);
    expect(lost).toBeGreaterThanOrEqual(10);
  });

  it(`client-IP affinity (the chart's sessionAffinity: ClientIP) loses none, and both replicas serve`, async () => {
    const outcomes = await pullThenAck(clientIp, 'affinity');
    const lost = outcomes.filter((o) => o.ack === 404).length;
    const perGateway = countBy(outcomes, (o) => o.pulledOn ?? '?');
    const gatewaysPerPod = Object.values(countBy([...new Set(outcomes.map((o) => `${o.pod} ${o.pulledOn}`))], (pair) => pair.split(' ')[0]!));
    console.log(`[in-cluster] client-IP affinity: ${lost} of ${WORKERS} acks answered 404; deliveries per gateway ${JSON.stringify(perGateway)}`);
    expect(countBy(outcomes, (o) => String(o.ack))).toEqual({ 200: WORKERS });
    expect(Object.keys(perGateway)).toHaveLength(2);
    expect(gatewaysPerPod.every((n) => n === 1)).toBe(true); // each pod on one gateway: the cost of ClientIP
  });
});
