// An SDK worker for e2e/secrets.e2e.test.ts: its handlers use a sensitive context value the way a
// careless handler would — in a stage log line, in a new sensitive context value of its result, and
// in the message of an error it throws. Nothing of it may reach a log line, a response or a span.
//
//   PO_BASE_URL, PO_WORKER_BASE_URL, PO_API_KEY, PO_INSTANCE_ID as for examples/example-worker.
import { createWorker } from '@po/worker-sdk';

const env = process.env;

const worker = createWorker({
  baseUrl: env.PO_BASE_URL,
  workerBaseUrl: env.PO_WORKER_BASE_URL || undefined,
  apiKey: env.PO_API_KEY,
  instanceId: env.PO_INSTANCE_ID || 'secret-worker',
  workerName: 'secret-worker',
  concurrency: 2,
  handlers: {
    /** Logs the password, issues a token derived from it as a sensitive context value. */
    'use-secret': (ctx) => {
      const password = ctx.context.dbPassword ?? '';
      ctx.log(`connecting to the database with password ${password}`);
      ctx.setContext('sessionToken', `token-for-${password}`, { sensitive: true });
      return 'connected';
    },
    /** Fails with the password in the error message (a driver error would do the same). */
    'leak-in-error': (ctx) => {
      throw new Error(`login failed for password ${ctx.context.dbPassword ?? ''}`);
    },
  },
});
worker.stopOnSignals();
await worker.start();
