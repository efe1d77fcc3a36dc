// The smallest worker: `node examples/dist/echo-worker.js`. Its output is its input. The Python
// and Go SDKs have the same example (libs/worker-sdk-python/examples/echo_worker.py,
// libs/worker-sdk-go/examples/echo), configured alike, which the SDK bench runs side by side.
//
//   PO_API_KEY          required, the application's API key
//   PO_BASE_URL         default http://127.0.0.1:8080
//   PO_WORKER_BASE_URL  optional, when the worker routes live elsewhere
//   PO_INSTANCE_ID      default {hostname}-{pid}; unique per process
//   PO_HANDLERS         handler names served by the echo handler [echo]
//   PO_CONCURRENCY      default 4
import { hostname } from 'node:os';
import { createWorker, type HandlerContext } from '@po/worker-sdk';

const env = process.env;
if (!env.PO_API_KEY) {
  console.error('PO_API_KEY is required: the API key of the application whose stages to run.');
  process.exit(1);
}
const echo = (ctx: HandlerContext) => ctx.input;
const names = (env.PO_HANDLERS || 'echo').split(',').map((n) => n.trim()).filter(Boolean);
const worker = createWorker({
  baseUrl: env.PO_BASE_URL || 'http://127.0.0.1:8080',
  ...(env.PO_WORKER_BASE_URL ? { workerBaseUrl: env.PO_WORKER_BASE_URL } : {}),
  apiKey: env.PO_API_KEY,
  instanceId: env.PO_INSTANCE_ID || `${hostname()}-${process.pid}`,
  workerName: 'echo-worker',
  handlers: Object.fromEntries(names.map((n) => [n, echo])),
  concurrency: env.PO_CONCURRENCY ? Number(env.PO_CONCURRENCY) : 4,
});
worker.stopOnSignals();
await worker.start();
