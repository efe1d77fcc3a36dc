// An SDK worker for e2e/context-fan-out.e2e.test.ts: its handler answers how much context it was
// given, as "<items>:<bytes of values>", so the test can see every stage got the whole context.
//
//   PO_BASE_URL, PO_WORKER_BASE_URL, PO_API_KEY, PO_INSTANCE_ID as for examples/example-worker.
import { createWorker } from '@po/worker-sdk';

const env = process.env;

const worker = createWorker({
  baseUrl: env.PO_BASE_URL,
  workerBaseUrl: env.PO_WORKER_BASE_URL || undefined,
  apiKey: env.PO_API_KEY,
  instanceId: env.PO_INSTANCE_ID || 'context-size-worker',
  workerName: 'context-size-worker',
  handlers: {
    measure: (ctx) => `${ctx.contextItems.length}:${ctx.contextItems.reduce((n, c) => n + c.value.length, 0)}`,
  },
});
worker.stopOnSignals();
await worker.start();
