// Forks the bench's SDK workers, each in its own process (worker-process.mjs), and gathers the
// instants they recorded.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchNode } from './runtime.mjs';

const WORKER_PROCESS = fileURLToPath(new URL('./worker-process.mjs', import.meta.url));

function once(child, types) {
  return new Promise((resolve, reject) => {
    const onMessage = (msg) => {
      if (!types.includes(msg?.type)) return;
      cleanup();
      if (msg.type === 'error') reject(new Error(`${child.benchName}: ${msg.message}`));
      else resolve(msg);
    };
    const onExit = (code, signal) => {
      cleanup();
      reject(new Error(`${child.benchName} exited (${signal ?? `code ${code}`}) before answering`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/**
 * Starts `count` worker processes sharing `slots` handler slots; resolves once each has
 * bootstrapped. env: extra environment (OTEL_* when tracing). handlerMs: each stage's handler
 * sleeps that long (0: instant).
 */
export async function startWorkerProcesses({
  cluster,
  slots,
  count = 2,
  tracing = false,
  env = {},
  label = 'bench',
  handlerMs = 0,
}) {
  const children = Array.from({ length: count }, (_, i) => {
    const config = {
      apiUrl: cluster.apiUrl,
      workerUrl: cluster.workerUrl,
      apiKey: cluster.apiKey,
      instanceId: `bench-${i}`,
      slots: Math.max(1, Math.round(slots / count)),
      tracing,
      handlerMs,
    };
    const profile = process.env.BENCH_CPU_PROF
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`,
          `--cpu-prof-name=${label}-worker-${i}.cpuprofile`,
        ]
      : [];
    const child = fork(WORKER_PROCESS, [JSON.stringify(config)], {
      env: { ...process.env, ...env },
      execPath: benchNode().path,
      execArgv: profile,
      stdio: ['ignore', 2, 2, 'ipc'], // nothing of theirs on the bench's stdout (JSON lines)
    });
    child.benchName = `worker-${i}`;
    return child;
  });
  const killAll = () =>
    children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  process.on('exit', killAll);
  try {
    await Promise.all(children.map((c) => once(c, ['ready', 'error'])));
  } catch (err) {
    killAll();
    process.off('exit', killAll);
    throw err;
  }
  let stopped;
  return {
    /** 'worker-N' → pid */
    pids: Object.fromEntries(children.map((c) => [c.benchName, c.pid])),
    /**
     * Stops each worker gracefully and returns what they recorded: received, accepted and
     * published (stageId → ms, the earliest over the workers) and each worker's stats.
     */
    stop() {
      stopped ??= (async () => {
        const answers = await Promise.all(
          children.map((c) => {
            const answer = once(c, ['stopped']);
            c.send({ type: 'stop' });
            return answer;
          }),
        );
        await Promise.all(
          children.map((c) =>
            c.exitCode !== null || c.signalCode !== null
              ? null
              : new Promise((r) => c.once('exit', r)),
          ),
        );
        process.off('exit', killAll);
        const merge = (key) => {
          const map = new Map();
          for (const a of answers)
            for (const [id, at] of a[key]) if (!map.has(id) || map.get(id) > at) map.set(id, at);
          return map;
        };
        return {
          received: merge('received'),
          accepted: merge('accepted'),
          leased: merge('leased'),
          published: merge('published'),
          stats: Object.fromEntries(children.map((c, i) => [c.benchName, answers[i].stats])),
        };
      })();
      return stopped;
    },
    kill: killAll,
  };
}
