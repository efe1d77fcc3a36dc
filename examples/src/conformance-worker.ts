// The TypeScript SDK's conformance worker: `node examples/dist/conformance-worker.js`.
// Its environment, handlers and the JSON lines it writes are the kit's contract, shared by every
// SDK: e2e/conformance/README.md.
import { appendFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as wait } from 'node:timers/promises';
import { createWorker, LeaseLostError, StageError, type HandlerContext } from '@po/worker-sdk';

const env = process.env;
const logFile = env.PO_CONFORMANCE_LOG;
if (!logFile) throw new Error('PO_CONFORMANCE_LOG is required');

/** One appendFileSync per line: the kit reads the file while the worker runs. */
function report(line: Record<string, unknown>): void {
  appendFileSync(logFile!, `${JSON.stringify(line)}\n`);
}

function ran(handler: string, ctx: HandlerContext): void {
  const { stageId, executionId, attempt } = ctx.stage;
  report({ event: 'ran', handler, stageId, executionId, attempt });
}

function cancelled(ctx: HandlerContext): void {
  const reason: unknown = ctx.signal.reason;
  const code = reason instanceof Error && 'code' in reason ? String(reason.code) : 'UNKNOWN';
  report({
    event: 'cancelled',
    stageId: ctx.stage.stageId,
    executionId: ctx.stage.executionId,
    code,
    reason: reason instanceof LeaseLostError ? reason.reason : '',
  });
}

const handlers = {
  'conf-echo': (ctx: HandlerContext) => {
    ran('conf-echo', ctx);
    return ctx.input;
  },
  'conf-fail': (ctx: HandlerContext) => {
    ran('conf-fail', ctx);
    const { code, message, retryable } = ctx.json<{ code: string; message: string; retryable?: boolean }>();
    throw new StageError(code, message, retryable === undefined ? {} : { retryable });
  },
  'conf-flaky': (ctx: HandlerContext) => {
    ran('conf-flaky', ctx);
    const { succeedOnAttempt } = ctx.json<{ succeedOnAttempt: number }>();
    const { attempt } = ctx.stage;
    if (attempt < succeedOnAttempt) throw new StageError('FLAKY', `attempt ${attempt}`, { retryable: true });
    return `attempt ${attempt}`;
  },
  'conf-approval': (ctx: HandlerContext) => {
    ran('conf-approval', ctx);
    return ctx.awaitApproval(ctx.input);
  },
  'conf-hold': async (ctx: HandlerContext) => {
    ran('conf-hold', ctx);
    const { seconds } = ctx.json<{ seconds: number }>();
    try {
      await wait(seconds * 1000, undefined, { signal: ctx.signal });
    } catch (err) {
      if (!ctx.signal.aborted) throw err;
      cancelled(ctx);
      throw ctx.signal.reason;
    }
    return 'held';
  },
  'conf-context': (ctx: HandlerContext) => {
    ran('conf-context', ctx);
    const { key, value, sensitive } = ctx.json<{ key: string; value: string; sensitive?: boolean }>();
    ctx.setContext(key, value, sensitive === undefined ? {} : { sensitive });
    ctx.log(`set ${key}`);
    return 'ok';
  },
};

type Name = keyof typeof handlers;
const names = env.PO_HANDLERS ? (env.PO_HANDLERS.split(',').map((n) => n.trim()) as Name[]) : (Object.keys(handlers) as Name[]);
const unknown = names.filter((n) => !(n in handlers));
if (unknown.length > 0) throw new Error(`PO_HANDLERS: unknown handler(s) ${unknown.join(', ')}`);

const number = (value: string | undefined) => (value ? Number(value) : undefined);
const renew = number(env.PO_LEASE_RENEW_INTERVAL_MS);
const drain = number(env.PO_DRAIN_TIMEOUT_MS);
const worker = createWorker({
  baseUrl: env.PO_BASE_URL || env.PO_WORKER_BASE_URL || 'http://127.0.0.1:8080',
  ...(env.PO_WORKER_BASE_URL ? { workerBaseUrl: env.PO_WORKER_BASE_URL } : {}),
  apiKey: env.PO_API_KEY ?? '',
  instanceId: env.PO_INSTANCE_ID || `${hostname()}-${process.pid}`,
  workerName: 'conformance-typescript',
  handlers: Object.fromEntries(names.map((n) => [n, handlers[n]])),
  concurrency: number(env.PO_CONCURRENCY) ?? 4,
  ...(renew === undefined ? {} : { leaseRenewIntervalMs: renew }),
  ...(drain === undefined ? {} : { drainTimeoutMs: drain }),
});

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void worker.stop({ reason: 'SIGTERM' }).then(() => {
    report({ event: 'stopped' });
    process.exit(0);
  });
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

await worker.start();
report({ event: 'ready' });
