// An SDK worker for e2e/incident-recovery.e2e.test.ts: a three-stage chain whose middle stage
// fails while a "downstream" is broken. Every handler call is appended to PO_CALLS_FILE (one JSON
// line: handler, stage id, pipeline id), so the test sees what ran, not only what the API says.
//
//   PO_BASE_URL, PO_WORKER_BASE_URL, PO_API_KEY, PO_INSTANCE_ID as for examples/example-worker;
//   PO_CALLS_FILE   where each call is recorded
//   PO_BROKEN_FILE  while this file exists, `load` fails with the terminal code DOWNSTREAM_DOWN
import { appendFileSync, existsSync } from 'node:fs';
import { createWorker, StageError } from '@po/worker-sdk';

const env = process.env;
const record = (handler, ctx) =>
  appendFileSync(env.PO_CALLS_FILE, `${JSON.stringify({ handler, stageId: ctx.stage.stageId, pipelineId: ctx.stage.pipelineId })}\n`);

const worker = createWorker({
  baseUrl: env.PO_BASE_URL,
  workerBaseUrl: env.PO_WORKER_BASE_URL || undefined,
  apiKey: env.PO_API_KEY,
  instanceId: env.PO_INSTANCE_ID || 'rerun-worker',
  workerName: 'rerun-worker',
  concurrency: 8,
  handlers: {
    /** Writes a context key the next stages read, and logs. */
    extract: (ctx) => {
      record('extract', ctx);
      ctx.log(`extracted for ${ctx.input}`);
      ctx.setContext('batch', `batch-of-${ctx.input}`);
      return `extracted ${ctx.input}`;
    },
    /** Fails while the downstream is broken; otherwise answers what `extract` wrote. */
    load: (ctx) => {
      record('load', ctx);
      if (existsSync(env.PO_BROKEN_FILE)) throw new StageError('DOWNSTREAM_DOWN', 'the warehouse is down', { retryable: false });
      return `loaded ${ctx.context.batch ?? '(no batch)'}`;
    },
    report: (ctx) => {
      record('report', ctx);
      return `reported ${ctx.context.batch ?? '(no batch)'}`;
    },
  },
});
worker.stopOnSignals();
await worker.start();
