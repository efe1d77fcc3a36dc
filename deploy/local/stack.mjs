// Runs the five services as child processes for local development (`npm run up` ends here).
// CLI: node deploy/local/stack.mjs [--no-demo]; env STACK_SERVICES=a,b limits what starts.
// Module: startStack({ services, env, log }) -> { urls, stop() }, for end-to-end tests.
// Builtins only. See docs/decisions/0004-local-stack.md.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { get } from 'node:http';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chartStickyRule, findNginx, startNginxFront } from './nginx.mjs';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_PORTS = {
  'api-gateway': 8080,
  'worker-gateway': 8081,
  'pipeline-service': 8082,
  'scheduler-service': 8083,
  'result-consumer': 8084,
};
/** GET /metrics of each service: a port of its own (METRICS_PORT), the services' defaults. */
export const DEFAULT_METRICS_PORTS = {
  'api-gateway': 9080,
  'worker-gateway': 9081,
  'pipeline-service': 9082,
  'scheduler-service': 9083,
  'result-consumer': 9084,
};
const COLORS = [36, 33, 35, 32, 34];

/** GET url; resolves with the status code, or with the error code when nothing answers. */
function probe(url) {
  return new Promise((resolve) => {
    const req = get(url, { timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve(err.code ?? err.message));
  });
}

/** Children lead their own process group (detached), so this reaches anything they spawned. */
function signalGroup(child, signal) {
  for (const pid of [-child.pid, child.pid]) {
    try {
      return process.kill(pid, signal);
    } catch {
      /* no such group or process: try the next, or it is already gone */
    }
  }
}

/**
 * Starts the services; resolves once every /readyz answers 200. Rejects, after stopping what it
 * started, when one exits first, after readyTimeoutMs, or when `signal` aborts. The result's
 * `exited` promise resolves with { name, code, signal } if a service exits while not stopping.
 */
export async function startStack({
  services = Object.keys(DEFAULT_PORTS),
  env = process.env,
  log = (line) => console.log(line),
  ports = {},
  metricsPorts = {},
  root = ROOT,
  readyTimeoutMs = 60_000,
  stopTimeoutMs = 15_000,
  color = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
  signal,
} = {}) {
  const mainOf = (name) => join(root, 'services', name, 'dist', 'main.js');
  const unknown = services.filter((name) => !(name in DEFAULT_PORTS));
  if (unknown.length) throw new Error(`unknown service(s): ${unknown.join(', ')}`);
  const unbuilt = services.map(mainOf).filter((file) => !existsSync(file));
  if (unbuilt.length) throw new Error(`not built (run npm run build): ${unbuilt.join(', ')}`);

  const urls = {};
  const metricsPortOf = {};
  for (const name of services) {
    urls[name] = `http://127.0.0.1:${ports[name] ?? DEFAULT_PORTS[name]}`;
    // A stack moved off the default API ports (tests) must not collide with one on the defaults:
    // its metrics then listen on any free port unless told otherwise.
    metricsPortOf[name] = metricsPorts[name] ?? (ports[name] === undefined ? DEFAULT_METRICS_PORTS[name] : 0);
  }
  const width = Math.max(...services.map((name) => name.length)) + 2;
  const live = new Map(); // name -> child, while it runs
  const closed = []; // resolve once each child has exited and its output is drained
  let stopping = null;
  let firstExit = null;
  let reportExit;
  const exited = new Promise((resolve) => (reportExit = resolve));
  const killAll = () => live.forEach((child) => signalGroup(child, 'SIGKILL'));
  process.on('exit', killAll); // never leave services behind, even if our caller exits abruptly

  services.forEach((name, i) => {
    const child = spawn(process.execPath, [mainOf(name)], {
      cwd: root,
      env: { ...env, PORT: new URL(urls[name]).port, METRICS_PORT: String(metricsPortOf[name]) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // a terminal Ctrl-C reaches only us; we stop them with SIGTERM
    });
    const tag = `[${name}]`.padEnd(width);
    const prefix = color ? `\x1b[${COLORS[i % COLORS.length]}m${tag}\x1b[0m` : tag;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) =>
        log(`${prefix} ${l}`),
      );
    }
    const gone = (code, sig) => {
      live.delete(name);
      if (!stopping && !firstExit) reportExit((firstExit = { name, code, signal: sig }));
    };
    child.on('exit', gone);
    child.on('error', (err) => {
      log(`${prefix} could not start: ${err.message}`);
      gone(null, null);
    });
    closed.push(new Promise((resolve) => child.on('close', resolve)));
    live.set(name, child);
  });

  function stop() {
    stopping ??= (async () => {
      live.forEach((child) => signalGroup(child, 'SIGTERM'));
      let timer;
      const late = new Promise((resolve) => (timer = setTimeout(resolve, stopTimeoutMs, true)));
      if (await Promise.race([Promise.all(closed).then(() => false), late])) {
        log(
          `stack: killing what is still running after ${stopTimeoutMs / 1000} s: ${[...live.keys()]}`,
        );
        killAll();
        await Promise.all(closed);
      }
      clearTimeout(timer);
      process.off('exit', killAll);
    })();
    return stopping;
  }

  const started = Date.now();
  const pending = new Set(services);
  const last = {};
  log(`stack: starting ${services.join(', ')}; waiting for /readyz…`);
  while (pending.size) {
    const probes = [...pending].map(async (name) => {
      last[name] = await probe(`${urls[name]}/readyz`);
      if (last[name] !== 200) return;
      pending.delete(name);
      log(`stack: ${name} ready at ${urls[name]} (${(Date.now() - started) / 1000} s)`);
    });
    await Promise.all(probes);
    let failure = null;
    if (signal?.aborted) failure = Object.assign(new Error('aborted'), { name: 'AbortError' });
    else if (firstExit) {
      const how = firstExit.signal ?? `code ${firstExit.code}`;
      failure = new Error(`${firstExit.name} exited (${how}) before it was ready`);
    } else if (pending.size && Date.now() - started > readyTimeoutMs) {
      const why = [...pending].map((name) => `${name} (${urls[name]}/readyz: ${last[name]})`);
      failure = new Error(`not ready after ${readyTimeoutMs / 1000} s: ${why.join(', ')}`);
    }
    if (failure) {
      await stop();
      throw failure;
    }
    if (pending.size) await sleep(300);
  }
  return { urls, stop, exited, services };
}

/** Runs the admin CLI to create an application; resolves with its JSON line. */
export function createDemoApp({ name = 'demo', root = ROOT, env = process.env } = {}) {
  const args = ['run', 'admin', '--silent', '--', 'apps', 'create', '--name', name];
  return new Promise((resolve, reject) => {
    execFile('npm', args, { cwd: root, env, timeout: 60_000 }, (err, stdout, stderr) => {
      try {
        if (err) throw err;
        const app = JSON.parse(stdout.split('\n').findLast((l) => l.startsWith('{')) ?? '');
        if (!app.apiKey) throw new Error('no apiKey in its output');
        resolve(app);
      } catch (e) {
        const why = e.message.split('\n')[0]; // execFile's message repeats stderr
        reject(new Error(`npm ${args.join(' ')}: ${why}\n${stderr}${stdout}`.trim()));
      }
    });
  });
}

/** Starts the example SDK worker (examples/) for the demo application; its lines are prefixed. */
export function startExampleWorker({
  apiUrl,
  workerUrl,
  apiKey,
  root = ROOT,
  env = process.env,
  log = (l) => console.log(l),
}) {
  const child = spawn(process.execPath, [join(root, 'examples', 'dist', 'example-worker.js')], {
    cwd: root,
    env: {
      ...env,
      PO_BASE_URL: apiUrl,
      PO_WORKER_BASE_URL: workerUrl,
      PO_API_KEY: apiKey,
      PO_INSTANCE_ID: 'local-example-worker',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) =>
      log(`[example-worker] ${l}`),
    );
  }
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs one demo pipeline through the example worker and reports how it ended. */
export async function runDemoPipeline({ apiUrl, apiKey, timeoutMs = 30_000 }) {
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
  const stages = [
    { stageName: 'fetch', stageHandlerName: 'echo', input: '{"order":42}' },
    { stageName: 'process', stageHandlerName: 'sleep', input: '{"ms":300}' },
    { stageName: 'notify', stageHandlerName: 'echo', input: 'done' },
  ];
  const started = Date.now();
  const res = await fetch(`${apiUrl}/pipelines/idempotent`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ idempotencyKey: `demo-${started}`, name: 'demo', stages }),
  });
  const { pipeline } = await res.json();
  while (Date.now() - started < timeoutMs) {
    const p = await (await fetch(`${apiUrl}/pipelines/${pipeline.id}`, { headers })).json();
    if (p.isTerminal)
      return {
        id: p.id,
        status: p.status,
        stageStatuses: p.stageStatuses,
        ms: Date.now() - started,
      };
    await sleep(100);
  }
  return { id: pipeline.id, status: 'still running', stageStatuses: [], ms: Date.now() - started };
}

function banner(urls, app) {
  const api = urls['api-gateway'] ?? 'http://127.0.0.1:8080';
  const stages = [{ stageName: 'build', stageHandlerName: 'echo' }];
  const body = JSON.stringify({ idempotencyKey: 'demo-1', name: 'hello', stages });
  const rule = '─'.repeat(72);
  return [
    '',
    rule,
    ` Pipeline orchestration is up: ${Object.keys(urls).join(', ')}`,
    urls['api-gateway'] && `   API             ${urls['api-gateway']}`,
    urls['worker-gateway'] && `   Worker gateway  ${urls['worker-gateway']}`,
    urls['api-gateway'] && `   Dashboard       ${urls['api-gateway']}/ui/  (sign in with the API key below)`,
    '   Health:',
    ...Object.entries(urls).map(
      ([name, url]) =>
        `     ${name.padEnd(18)} ${url}/healthz  /readyz   metrics: http://127.0.0.1:${DEFAULT_METRICS_PORTS[name]}/metrics`,
    ),
    app
      ? `   Demo application: applicationId ${app.applicationId}, API key ${app.apiKey}`
      : '   Demo application: none (--no-demo, or creating it failed)',
    '',
    ' Create a pipeline:',
    `   curl -sS -X POST ${api}/pipelines/idempotent \\`,
    `     -H 'Content-Type: application/json' -H 'X-API-Key: ${app?.apiKey ?? '<API key>'}' \\`,
    `     -d '${body}'`,
    '',
    ' Or with the po command line (libs/cli; `po --help`):',
    `   PO_API_URL=${api} PO_API_KEY=${app?.apiKey ?? '<API key>'} npx po pipelines list`,
    '',
    ' Ctrl-C stops everything.',
    rule,
  ].filter((line) => line !== undefined);
}

async function main() {
  const args = process.argv.slice(2);
  if (args.some((a) => a !== '--no-demo')) {
    console.error('usage: node deploy/local/stack.mjs [--no-demo]  (env STACK_SERVICES=a,b,...)');
    process.exit(2);
  }
  const only = (process.env.STACK_SERVICES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const abort = new AbortController();
  let stack = null;
  let firstSignal = 0;
  const stopAndExit = async (code) => {
    await worker?.stop();
    await front?.stop();
    await stack.stop();
    console.log('stack: stopped');
    process.exit(code);
  };
  let worker = null;
  let front = null;
  const onSignal = (sig) => {
    // npm forwards the terminal's SIGINT as well: only a second Ctrl-C a moment later kills at once.
    if (firstSignal && Date.now() - firstSignal > 1000) {
      console.log(`stack: ${sig} again, killing the services now`);
      process.exit(0); // startStack's 'exit' hook sends SIGKILL
    }
    if (firstSignal) return;
    firstSignal = Date.now();
    console.log(`\nstack: ${sig}, stopping the services (SIGTERM, then SIGKILL after 15 s)…`);
    abort.abort(); // during startup, startStack stops what it started and rejects
    if (stack) stopAndExit(0);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, onSignal);

  try {
    stack = await startStack({ services: only.length ? only : undefined, signal: abort.signal });
  } catch (err) {
    console.error(abort.signal.aborted ? 'stack: stopped' : `stack: ${err.message}`);
    process.exit(abort.signal.aborted ? 0 : 1);
  }
  if (abort.signal.aborted) return stopAndExit(0); // the signal came just as startup finished
  stack.exited.then(({ name, code, signal }) => {
    console.error(`stack: ${name} exited (${signal ?? `code ${code}`}); stopping the others`);
    return stopAndExit(1);
  });
  let app = null;
  if (!args.includes('--no-demo')) {
    app = await createDemoApp().catch((err) => {
      console.error(`stack: warning: could not create the demo application: ${err.message}`);
      return null;
    });
  }
  if (!firstSignal) console.log(banner(stack.urls, app).join('\n'));
  let apiUrl = stack.urls['api-gateway'];
  let workerUrl = stack.urls['worker-gateway'];
  // With nginx installed, one base URL for the whole API, routed like the Helm chart's ingress.
  if (apiUrl && workerUrl && findNginx() && !firstSignal) {
    try {
      front = await startNginxFront({
        apiUrl,
        workerUrls: [workerUrl],
        port: Number(process.env.STACK_FRONT_PORT ?? 8000),
        hashOn: chartStickyRule().hashOn,
      });
      console.log(
        `stack: one base URL for the whole API (nginx, the chart's routing): ${front.url}`,
      );
      apiUrl = front.url;
      workerUrl = front.url;
    } catch (err) {
      console.error(`stack: nginx front not started (${err.message}); use the service URLs above`);
    }
  }
  if (app && apiUrl && workerUrl && !firstSignal) {
    worker = startExampleWorker({ apiUrl, workerUrl, apiKey: app.apiKey });
    const demo = await runDemoPipeline({ apiUrl, apiKey: app.apiKey });
    console.log(
      `stack: demo pipeline ${demo.id} ${demo.status} in ${demo.ms} ms (${demo.stageStatuses.join(', ')}) — ` +
        `the example worker keeps serving echo, sleep, fail, flaky and approve for application ${app.applicationId}`,
    );
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
