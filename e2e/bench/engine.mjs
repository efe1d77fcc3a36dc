// `npm run bench` (engine part): drives N pipelines of M stages through SDK workers over HTTP
// against the five services started as processes, and prints throughput and latencies.
// Not a test: it asserts nothing, it measures. Env: BENCH_PIPELINES (200), BENCH_STAGES (5),
// BENCH_SLOTS (16 worker slots, split over 2 workers), BENCH_TRACING=1: the same run twice,
// tracing off and then on (every service and the bench's SDK workers export every span to a
// JSON-lines file, OTEL_TRACES_EXPORTER=file), and a line comparing the two.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { shutdownTracing, startTracing } from '../../libs/telemetry/dist/index.js';
import { createWorker } from '../../libs/worker-sdk/dist/index.js';
import { percentile, startBenchCluster } from './cluster.mjs';

const PIPELINES = Number(process.env.BENCH_PIPELINES ?? 200);
const STAGES = Number(process.env.BENCH_STAGES ?? 5);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 16);

export async function benchEngine(log = console.log, { tracing = false } = {}) {
  const spanDir = tracing ? mkdtempSync(join(tmpdir(), 'po-bench-spans-')) : undefined;
  const otel = tracing ? { OTEL_TRACES_EXPORTER: 'file', OTEL_FILE_EXPORTER_PATH: join(spanDir, '{service}-{pid}.jsonl') } : {};
  const cluster = await startBenchCluster({ env: otel });
  // The SDK workers run in this process: with tracing, it registers a provider too (handler spans).
  if (tracing) await startTracing({ serviceName: 'bench-worker', env: { ...process.env, ...otel } });
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
  if (tracing) await shutdownTracing();

  // Where the time between "ready" and "pulled" goes: the dispatcher's pass (ready → execution
  // created), the publish (→ confirmed by Redis), and the delivery (→ the pull answered).
  const dispatch = await cluster.executionTimes();
  const readyToDispatched = [];
  const dispatchedToPublished = [];
  const publishedToPulled = [];
  const readyToPulled = [];
  const resultToPulled = [];
  for (const p of pipelines) {
    p.stages.forEach((s, i) => {
      const pulledAt = received.get(s.id);
      if (pulledAt === undefined) return;
      const readyAt = i === 0 ? Date.parse(p.createdAt) : Date.parse(p.stages[i - 1].finishedAt);
      readyToPulled.push(pulledAt - readyAt);
      const d = dispatch.get(s.id);
      if (d) {
        readyToDispatched.push(d.dispatchedAt - readyAt);
        if (d.publishedAt) dispatchedToPublished.push(d.publishedAt - d.dispatchedAt);
        if (d.publishedAt) publishedToPulled.push(pulledAt - d.publishedAt);
      }
      if (i > 0) resultToPulled.push(pulledAt - accepted.get(p.stages[i - 1].id));
    });
  }
  const completed = pipelines.filter((p) => p.status === 'Completed').length;
  const result = {
    tracing,
    pipelines: PIPELINES,
    stagesPerPipeline: STAGES,
    workerSlots: SLOTS,
    completed,
    seconds: +(elapsedMs / 1000).toFixed(2),
    stagesPerSecond: +((PIPELINES * STAGES) / (elapsedMs / 1000)).toFixed(1),
    readyToPulledMs: { p50: percentile(readyToPulled, 50), p99: percentile(readyToPulled, 99) },
    result202ToNextPulledMs: { p50: percentile(resultToPulled, 50), p99: percentile(resultToPulled, 99) },
    breakdownMs: {
      readyToDispatched: { p50: percentile(readyToDispatched, 50), p99: percentile(readyToDispatched, 99) },
      dispatchedToPublished: { p50: percentile(dispatchedToPublished, 50), p99: percentile(dispatchedToPublished, 99) },
      publishedToPulled: { p50: percentile(publishedToPulled, 50), p99: percentile(publishedToPulled, 99) },
    },
  };
  await cluster.stop();
  if (spanDir) {
    // Every process flushed its spans on SIGTERM: count what was exported.
    const files = readdirSync(spanDir);
    result.spansExported = files.reduce((n, f) => n + readFileSync(join(spanDir, f), 'utf8').split('\n').filter(Boolean).length, 0);
    result.spansPerStage = +(result.spansExported / (PIPELINES * STAGES)).toFixed(1);
    rmSync(spanDir, { recursive: true, force: true });
  }
  log(JSON.stringify({ bench: 'engine', ...result }));
  return result;
}

/** BENCH_TRACING=1: the engine bench with tracing off, then on, and the cost of tracing. */
export async function benchEngineTracing(log = console.log) {
  const off = await benchEngine(log, { tracing: false });
  const on = await benchEngine(log, { tracing: true });
  log(
    JSON.stringify({
      bench: 'engine-tracing-overhead',
      stagesPerSecondOff: off.stagesPerSecond,
      stagesPerSecondOn: on.stagesPerSecond,
      throughputChangePercent: +(((on.stagesPerSecond - off.stagesPerSecond) / off.stagesPerSecond) * 100).toFixed(1),
      readyToPulledP50Ms: { off: off.readyToPulledMs.p50, on: on.readyToPulledMs.p50 },
      spansExported: on.spansExported,
    }),
  );
  return { off, on };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.env.BENCH_TRACING === '1') await benchEngineTracing();
  else await benchEngine();
}
