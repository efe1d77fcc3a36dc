// An SDK worker for e2e/worker-results.e2e.test.ts: its handler writes a context value larger
// than creation's 65536-byte limit, which a result may carry (issue 10).
//
//   PO_BASE_URL, PO_WORKER_BASE_URL, PO_API_KEY, PO_INSTANCE_ID as for examples/example-worker.
import { createWorker } from '@po/worker-sdk';

const env = process.env;

const worker = createWorker({
  baseUrl: env.PO_BASE_URL,
  workerBaseUrl: env.PO_WORKER_BASE_URL || undefined,
  apiKey: env.PO_API_KEY,
  instanceId: env.PO_INSTANCE_ID || 'big-context-worker',
  workerName: 'big-context-worker',
  handlers: {
    /** Stores a report of `input` bytes (a decimal string) under the context key `report`. */
    'write-report': (ctx) => {
      ctx.setContext('report', 'r'.repeat(Number(ctx.input)));
      return 'written';
    },
  },
});
worker.stopOnSignals();
await worker.start();
