// `npm run bench` (engine part): drives N pipelines of M stages through SDK workers over HTTP
// against the five services started as processes, and prints throughput and latencies.
// Not a test: it asserts nothing, it measures. Env: BENCH_PIPELINES (200), BENCH_STAGES (5),
// BENCH_SLOTS (16 worker slots, split over 2 workers), BENCH_TRACING (unused until telemetry).
import { performance } from 'node:perf_hooks';
import { createWorker } from '../../libs/worker-sdk/dist/index.js';
import { percentile, startBenchCluster } from './cluster.mjs';

const PIPELINES = Number(process.env.BENCH_PIPELINES ?? 200);
const STAGES = Number(process.env.BENCH_STAGES ?? 5);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 16);

export async function benchEngine(log = console.log) {
  const cluster = await startBenchCluster();
  const received = new Map(); // stageId -> ms when its pull answered
  const accepted = new Map(); // stageId -> ms when its result got 202
  // Wrap fetch to timestamp protocol events exactly where a worker sees them.
  const timedFetch = async (url, init) => {
    const res = await fetch(url, init);
    const path = new URL(url).pathname;
    if (path === '/jobs/pull' && res.status === 200) {
      const at = Date.now();
      const body = await res.clone().json();
      received.set(body.payload.stageId, at);
    } else if (path.endsWith('/result') && res.status === 202) {
      accepted.set(Number(path.split('/')[2]), Date.now());
    }
    return res;
  };
  const workers = [0, 1].map((i) =>
    createWorker({
      baseUrl: cluster.apiUrl,
      workerBaseUrl: cluster.workerUrl,
      apiKey: cluster.apiKey,
      instanceId: `bench-${i}`,
      handlers: { work: async (ctx) => ctx.input },
      concurrency: SLOTS / 2,
      waitSeconds: 20,
      sendEvents: false,
      fetch: timedFetch,
      logger: { info() {}, warn() {}, error: (...a) => console.error(...a), debug() {} },
    }),
  );
  await Promise.all(workers.map((w) => w.start()));

  const stages = Array.from({ length: STAGES }, (_, i) => ({ stageName: `s${i}`, stageHandlerName: 'work', input: `x${i}` }));
  const started = performance.now();
  const ids = [];
  const creators = 8;
  let next = 0;
  await Promise.all(
    Array.from({ length: creators }, async () => {
      while (next < PIPELINES) {
        const i = next++;
        const res = await fetch(`${cluster.apiUrl}/pipelines/idempotent`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': cluster.apiKey },
          body: JSON.stringify({ idempotencyKey: `bench-${i}`, name: `bench-${i}`, stages }),
        });
        ids.push((await res.json()).pipeline.id);
      }
    }),
  );
  const pipelines = await cluster.waitAllTerminal(ids);
  const elapsedMs = performance.now() - started;
  await Promise.all(workers.map((w) => w.stop()));

  const readyToPulled = [];
  const resultToPulled = [];
  for (const p of pipelines) {
    p.stages.forEach((s, i) => {
      const pulledAt = received.get(s.id);
      if (pulledAt === undefined) return;
      const readyAt = i === 0 ? Date.parse(p.createdAt) : Date.parse(p.stages[i - 1].finishedAt);
      readyToPulled.push(pulledAt - readyAt);
      if (i > 0) resultToPulled.push(pulledAt - accepted.get(p.stages[i - 1].id));
    });
  }
  const completed = pipelines.filter((p) => p.status === 'Completed').length;
  const result = {
    pipelines: PIPELINES,
    stagesPerPipeline: STAGES,
    workerSlots: SLOTS,
    completed,
    seconds: +(elapsedMs / 1000).toFixed(2),
    stagesPerSecond: +((PIPELINES * STAGES) / (elapsedMs / 1000)).toFixed(1),
    readyToPulledMs: { p50: percentile(readyToPulled, 50), p99: percentile(readyToPulled, 99) },
    result202ToNextPulledMs: { p50: percentile(resultToPulled, 50), p99: percentile(resultToPulled, 99) },
  };
  log(JSON.stringify({ bench: 'engine', ...result }));
  await cluster.stop();
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchEngine();
