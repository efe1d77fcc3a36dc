// `npm run bench` (SDK part, BENCH_ONLY=sdks): the engine's saturation phase run by each SDK's echo
// example in turn (TypeScript, Python, Go), each on a fresh cluster with the same load, so their
// stages/s and CPU per stage compare within one run (issue 30: Python and Go within 20% of the
// TypeScript SDK). Not a test: it asserts nothing.
//
//   BENCH_SDKS      comma list of typescript,python,go [all three]
//   BENCH_PIPELINES, BENCH_STAGES, BENCH_SLOTS, BENCH_WARMUP_PIPELINES as for the engine bench
//                   (engine.mjs); the slots are split over two worker processes per SDK.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { REDIS_URL, startBenchCluster } from './cluster.mjs';
import { answerCounts, createClosedLoop } from './load.mjs';
import { benchDb } from './pgwork.mjs';
import { postmasterOf, startResourceMeter } from './resources.mjs';
import { waitAllTerminal } from './stages.mjs';
import { benchNode } from './runtime.mjs';
import { boxCalibrationMs } from './box.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const num = (name, fallback) => Number(process.env[name] ?? fallback);
const PIPELINES = num('BENCH_PIPELINES', 2000);
const STAGES = num('BENCH_STAGES', 5);
const SLOTS = num('BENCH_SLOTS', 32);
const WARMUP = num('BENCH_WARMUP_PIPELINES', 1000);
const CREATORS = 8;
const WORKERS = 2;

/** Each SDK's echo example; `build` returns the command line (after building what needs it). */
const SDKS = {
  typescript: () => [benchNode().path, join(ROOT, 'examples/dist/echo-worker.js')],
  python: () => ['python3', join(ROOT, 'libs/worker-sdk-python/examples/echo_worker.py')],
  go: (dir) => {
    const bin = join(dir, 'echo');
    execFileSync('go', ['build', '-o', bin, './examples/echo'], {
      cwd: join(ROOT, 'libs/worker-sdk-go'),
      env: { ...process.env, GOPROXY: 'off', GOFLAGS: '' },
    });
    return [bin];
  },
};

const chosen = (process.env.BENCH_SDKS ?? Object.keys(SDKS).join(',')).split(',').map((s) => s.trim());
for (const s of chosen) if (!SDKS[s]) throw new Error(`BENCH_SDKS: unknown SDK ${s}`);

/** Starts the echo workers and resolves once both have bootstrapped (their rows say Active). */
async function startEchoWorkers(command, cluster, db, sdk) {
  const children = Array.from({ length: WORKERS }, (_, i) =>
    spawn(command[0], command.slice(1), {
      env: {
        ...process.env,
        PO_BASE_URL: cluster.apiUrl,
        PO_WORKER_BASE_URL: cluster.workerUrl,
        PO_API_KEY: cluster.apiKey,
        PO_INSTANCE_ID: `bench-${sdk}-${i}`,
        PO_HANDLERS: 'work',
        PO_CONCURRENCY: String(Math.max(1, Math.round(SLOTS / WORKERS))),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  );
  const kill = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  process.on('exit', kill);
  for (const until = Date.now() + 60_000; ; ) {
    const { rows } = await db.query(
      "SELECT count(*)::int AS n FROM workers WHERE instance_id LIKE $1 AND status = 'Active'",
      [`bench-${sdk}-%`],
    );
    if (rows[0].n === WORKERS) break;
    if (children.some((c) => c.exitCode !== null) || Date.now() > until) {
      kill();
      throw new Error(`${sdk}: the echo workers did not bootstrap`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pids: Object.fromEntries(children.map((c, i) => [`${sdk}-worker-${i}`, c.pid])),
    async stop() {
      await Promise.all(
        children.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve() : (c.once('exit', resolve), c.kill('SIGTERM'))))),
      );
      process.off('exit', kill);
    },
    kill,
  };
}

async function runSdk(sdk, log) {
  const dir = mkdtempSync(join(tmpdir(), `po-bench-${sdk}-`));
  const boxMs = boxCalibrationMs();
  const cluster = await startBenchCluster({ label: `sdk-${sdk}` });
  const redis = new Redis(REDIS_URL);
  let db;
  let workers;
  try {
    db = await benchDb(cluster.directUrl);
    workers = await startEchoWorkers(SDKS[sdk](dir), cluster, db, sdk);
    if (WARMUP > 0) {
      const warm = await createClosedLoop(cluster, { count: WARMUP, creators: CREATORS, stages: STAGES, prefix: 'warm' });
      await waitAllTerminal(cluster, db, warm.filter((a) => a.id !== null).map((a) => a.id));
    }
    const meter = await startResourceMeter({
      processes: { ...cluster.pids, ...workers.pids },
      postmasterPid: postmasterOf(db.backendPid),
      redis,
    });
    const startedAt = Date.now();
    const answers = await createClosedLoop(cluster, { count: PIPELINES, creators: CREATORS, stages: STAGES, prefix: 'sat' });
    const ids = answers.filter((a) => a.id !== null).map((a) => a.id);
    const end = await waitAllTerminal(cluster, db, ids);
    const usage = await meter.end();
    const units = ids.length * STAGES;
    const elapsedMs = end.endMs - startedAt;
    const workerCpu = Object.keys(workers.pids).reduce((s, n) => s + (usage.processes[n]?.cpuSeconds ?? 0), 0);
    const line = {
      bench: `sdks.${sdk}`,
      sdk,
      pipelines: PIPELINES,
      stagesPerPipeline: STAGES,
      workerSlots: SLOTS,
      workerProcesses: WORKERS,
      createNon2xx: answerCounts(answers).non2xx,
      statusCounts: end.statusCounts,
      seconds: +(elapsedMs / 1000).toFixed(2),
      stagesPerSecond: +(units / (elapsedMs / 1000)).toFixed(1),
      workerCpuMsPerStage: +((workerCpu * 1000) / units).toFixed(3),
      workerRssMiB: Object.keys(workers.pids).map((n) => usage.processes[n]?.rssMiB ?? null),
      boxCalibrationMs: boxMs,
    };
    log(JSON.stringify(line));
    return line;
  } finally {
    await workers?.stop().catch(() => workers.kill());
    await db?.end().catch(() => {});
    await redis.quit();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every SDK of BENCH_SDKS in turn, then one line comparing each with the TypeScript SDK. */
export async function benchSdks(log = console.log) {
  const lines = {};
  for (const sdk of chosen) lines[sdk] = await runSdk(sdk, log);
  const ts = lines.typescript?.stagesPerSecond;
  if (ts)
    log(
      JSON.stringify({
        bench: 'sdks.comparison',
        stagesPerSecond: Object.fromEntries(chosen.map((s) => [s, lines[s].stagesPerSecond])),
        ofTypescript: Object.fromEntries(chosen.map((s) => [s, +(lines[s].stagesPerSecond / ts).toFixed(3)])),
        workerCpuMsPerStage: Object.fromEntries(chosen.map((s) => [s, lines[s].workerCpuMsPerStage])),
      }),
    );
  return lines;
}
