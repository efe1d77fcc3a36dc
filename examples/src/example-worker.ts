// A runnable worker: `node examples/dist/example-worker.js`.
//
//   PO_API_KEY        required, the application's API key
//   PO_BASE_URL       default http://127.0.0.1:8080
//   PO_WORKER_BASE_URL  optional, when the worker routes live elsewhere
//   PO_INSTANCE_ID    default {hostname}-{pid}; unique per process
//   PO_CONCURRENCY    default 4
//   PO_HANDLERS       optional comma list limiting the handlers served (default: all)
//
// Ctrl+C (or SIGTERM) drains: running stages finish, then the worker announces its shutdown.
import { hostname } from 'node:os';
import { createWorker, WorkerConfigError } from '@po/worker-sdk';
import { approve, echo, fail, flaky, sleep } from './handlers.js';

const env = process.env;

/** Every example handler; `hold` is `sleep` under its own queue name. */
const ALL_HANDLERS = { echo, sleep, hold: sleep, fail, flaky, approve };

function chosenHandlers(list: string | undefined) {
  if (!list) return ALL_HANDLERS;
  const names = list
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(n in ALL_HANDLERS));
  if (unknown.length > 0) throw new Error(`PO_HANDLERS: unknown handler(s) ${unknown.join(', ')}`);
  return Object.fromEntries(names.map((n) => [n, ALL_HANDLERS[n as keyof typeof ALL_HANDLERS]]));
}

function main(): Promise<void> | undefined {
  const apiKey = env.PO_API_KEY;
  if (apiKey === undefined || apiKey === '') {
    console.error('PO_API_KEY is required: the API key of the application whose stages to run.');
    process.exitCode = 1;
    return undefined;
  }
  let worker;
  try {
    worker = createWorker({
      baseUrl: env.PO_BASE_URL || 'http://127.0.0.1:8080',
      ...(env.PO_WORKER_BASE_URL ? { workerBaseUrl: env.PO_WORKER_BASE_URL } : {}),
      apiKey,
      instanceId: env.PO_INSTANCE_ID || `${hostname()}-${process.pid}`,
      workerName: 'example-worker',
      handlers: chosenHandlers(env.PO_HANDLERS),
      concurrency: env.PO_CONCURRENCY ? Number(env.PO_CONCURRENCY) : 4,
    });
  } catch (err) {
    if (!(err instanceof WorkerConfigError)) throw err;
    console.error(err.message);
    process.exitCode = 1;
    return undefined;
  }
  worker.stopOnSignals();
  return worker.start();
}

try {
  await main();
} catch (err) {
  // The SDK has logged the details (JSON lines on stderr).
  console.error(
    `example worker could not start: ${err instanceof Error ? err.message : String(err)}`,
  );
  process.exitCode = 1;
}
