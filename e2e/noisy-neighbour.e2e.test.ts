import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startCluster, type Cluster } from './support/cluster.js';
import { call, waitFor } from './support/http.js';
import type { ServiceName } from './support/processes.js';

/**
 * Issue 10's noisy neighbour: while application A floods the stack (pulls it never acks, pulls from
 * many queue names, oversized bodies, log spam), application B still runs its pipelines to
 * completion and no service grows past the memory limit the chart gives its pod. B's stage latency
 * under the flood is reported next to a quiet run's, not asserted: speed is the bench's business.
 */
const PIPELINES = 100;

/** Memory limits from the chart's values, in bytes. */
function chartMemoryLimits(): Record<ServiceName, number> {
  const values = parse(readFileSync('helm/pipeline-orchestration/values.yaml', 'utf8')) as {
    services: Record<ServiceName, { resources: { limits: { memory: string } } }>;
  };
  const bytes = (q: string) => {
    const m = /^(\d+)(Mi|Gi)$/.exec(q);
    if (!m) throw new Error(`unexpected memory quantity ${q}`);
    return Number(m[1]) * (m[2] === 'Gi' ? 1024 ** 3 : 1024 ** 2);
  };
  return Object.fromEntries(Object.entries(values.services).map(([name, s]) => [name, bytes(s.resources.limits.memory)])) as Record<ServiceName, number>;
}

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status);
  return kb ? Number(kb[1]) * 1024 : 0;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

describe('a flooding application does not take the service from another', () => {
  let cluster: Cluster;
  let a: { applicationId: number; apiKey: string };
  let b: { applicationId: number; apiKey: string };
  const peakRss = new Map<string, number>();
  let sampler: NodeJS.Timeout | undefined;

  beforeAll(async () => {
    cluster = await startCluster({
      env: {
        // The flood's access log lines would pile up in this process's memory.
        LOG_LEVEL: 'warn',
        GATEWAY_MAX_INFLIGHT_PER_APP: '16',
        GATEWAY_MAX_WAITING_PER_APP: '32',
        DISPATCH_SWEEP_INTERVAL_MS: '500',
      },
    });
    a = await cluster.createApp('flooder');
    b = await cluster.createApp('bystander');
    const workerEnv = { PO_BASE_URL: cluster.apiUrl, PO_WORKER_BASE_URL: cluster.workerUrl, PO_API_KEY: b.apiKey, PO_HANDLERS: 'echo', PO_CONCURRENCY: '4' };
    cluster.startWorker('b-worker-1', { ...workerEnv, PO_INSTANCE_ID: 'b-worker-1' });
    cluster.startWorker('b-worker-2', { ...workerEnv, PO_INSTANCE_ID: 'b-worker-2' });
    sampler = setInterval(() => {
      for (const s of cluster.services) {
        if (!s.pid) continue;
        try {
          peakRss.set(s.name, Math.max(peakRss.get(s.name) ?? 0, rssBytes(s.pid)));
        } catch {
          // the process is gone; the liveness check below reports it
        }
      }
    }, 200);
  }, 120_000);

  afterAll(async () => {
    clearInterval(sampler);
    await cluster?.stop();
  });

  /** Runs B's pipelines (two echo stages each) to completion; returns each stage's ready → finished ms. */
  async function runB(label: string): Promise<number[]> {
    const api = (method: string, path: string, json?: unknown) => call(cluster.apiUrl, method, path, { json, headers: { 'x-api-key': b.apiKey } });
    const ids = await Promise.all(
      Array.from({ length: PIPELINES }, async (_, i) => {
        const r = await api('POST', '/pipelines/idempotent', {
          idempotencyKey: `${label}-${i}`,
          name: `${label}-${i}`,
          stages: [
            { stageName: 'one', stageHandlerName: 'echo', input: 'x' },
            { stageName: 'two', stageHandlerName: 'echo', input: 'y' },
          ],
        });
        expect(r.status).toBe(201);
        return r.body.pipeline.id as number;
      }),
    );
    const latencies: number[] = [];
    for (const id of ids) {
      const p = await waitFor(`${label} pipeline ${id} terminal`, async () => {
        const r = await api('GET', `/pipelines/${id}`);
        return r.body?.isTerminal ? r.body : undefined;
      }, 90_000, 200);
      expect(p.status).toBe('Completed');
      const [one, two] = p.stages;
      latencies.push(Date.parse(one.finishedAt) - Date.parse(p.createdAt), Date.parse(two.finishedAt) - Date.parse(one.finishedAt));
    }
    return latencies;
  }

  /** A's flood: each loop runs until `stop` and counts the statuses it got. */
  function flood(stop: AbortSignal, statuses: Map<string, number>): Promise<unknown>[] {
    const count = (what: string, status: number) => statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1);
    const loop = async (what: string, once: () => Promise<number>) => {
      while (!stop.aborted) {
        try {
          count(what, await once());
        } catch {
          count(what, 0);
        }
      }
    };
    const raw = async (base: string, path: string, body: string | Buffer, headers: Record<string, string> = {}) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: stop });
      await res.arrayBuffer();
      return res.status;
    };
    const asA = { 'x-api-key': a.apiKey };
    const hogQueue = `app_${a.applicationId}_hog_StageNext`;
    // About 6 MiB of `[0,0,…]`: the shape that cost the most heap per byte in the JSON walk.
    const zeros = Buffer.from(`[${'0,'.repeat(3 * 1024 * 1024)}0]`);
    let n = 0;
    return [
      // Pulls A never acks: its deliveries stay held until the visibility timeout.
      ...Array.from({ length: 24 }, () => loop('pull-no-ack', () => raw(cluster.workerUrl, '/jobs/pull', JSON.stringify({ queue: hogQueue, waitSeconds: 2 }), asA))),
      // A new queue name on every pull.
      ...Array.from({ length: 6 }, () =>
        loop('pull-many-queues', () => raw(cluster.workerUrl, '/jobs/pull', JSON.stringify({ queue: `app_${a.applicationId}_h${(n += 1)}_StageNext`, waitSeconds: 0 }), asA)),
      ),
      loop('huge-logs', () => raw(cluster.apiUrl, '/logs', zeros)),
      loop('huge-ack', () => raw(cluster.workerUrl, '/jobs/ack', zeros)),
      loop('huge-legacy-create', () => raw(cluster.apiUrl, '/pipelines', zeros)),
      ...Array.from({ length: 4 }, () =>
        loop('log-spam', () => raw(cluster.apiUrl, '/logs', JSON.stringify({ message: 'spam', logLevel: 'Information', created: new Date().toISOString() }))),
      ),
    ];
  }

  it('B completes its pipelines while A floods, and every service stays under its chart memory limit', async () => {
    const quiet = await runB('quiet');

    // A's own backlog, so its pulls really take deliveries and hold them.
    const apiA = (json: unknown) => call(cluster.apiUrl, 'POST', '/pipelines/idempotent', { json, headers: { 'x-api-key': a.apiKey } });
    for (let i = 0; i < 200; i += 1) {
      const r = await apiA({ idempotencyKey: `hog-${i}`, name: `hog-${i}`, stages: [{ stageName: 'hog', stageHandlerName: 'hog', input: 'x' }] });
      expect(r.status).toBe(201);
    }

    const stop = new AbortController();
    const statuses = new Map<string, number>();
    const flooding = flood(stop.signal, statuses);
    await new Promise((r) => setTimeout(r, 2000));
    const noisy = await runB('noisy');
    stop.abort();
    await Promise.all(flooding);

    const report = {
      quietP50Ms: percentile(quiet, 50),
      quietP99Ms: percentile(quiet, 99),
      noisyP50Ms: percentile(noisy, 50),
      noisyP99Ms: percentile(noisy, 99),
      p99Ratio: Math.round((percentile(noisy, 99) / percentile(quiet, 99)) * 100) / 100,
      floodStatuses: Object.fromEntries([...statuses].sort()),
      peakRssMiB: Object.fromEntries([...peakRss].map(([k, v]) => [k, Math.round(v / 1024 / 1024)])),
    };
    console.log(`noisy-neighbour ${JSON.stringify(report)}`);

    // A met its own limits, not B's: it was refused, and the flood reached every route it aimed at.
    expect(statuses.get('pull-no-ack 429') ?? 0).toBeGreaterThan(0);
    // Oversized bodies are refused (413, the connection then closed mid-upload: 0 here), throttled
    // before they are read (429 on anonymous /logs), or, on legacy creation whose limit is the
    // largest pipeline, found to carry no apiKey by the scan that runs before parsing (400).
    const huge = [...statuses.keys()].filter((k) => k.startsWith('huge-'));
    expect(huge.length).toBeGreaterThan(0);
    expect(huge.filter((k) => !/ (0|413|429)$/.test(k) && k !== 'huge-legacy-create 400')).toEqual([]);
    expect(statuses.get('log-spam 429') ?? 0).toBeGreaterThan(0);
    expect([...statuses.keys()].filter((k) => / 5\d\d$/.test(k))).toEqual([]);

    const limits = chartMemoryLimits();
    for (const s of cluster.services) {
      expect(s.running, `${s.name} still running`).toBe(true);
      const base = s.name.replace(/-\d+$/, '') as ServiceName;
      expect(peakRss.get(s.name) ?? 0, `${s.name} peak RSS`).toBeLessThan(limits[base]);
    }
  }, 300_000);
});
