// One SDK worker in its own process, forked by the engine bench (workers.mjs) so the bench
// driver's event loop is not what limits the run. argv[2] is its JSON configuration
// ({ apiUrl, workerUrl, apiKey, instanceId, slots, tracing, handlerMs }). It timestamps, exactly where the
// worker sees them, each pull that returned a delivery and each result answered 202
// (stageId → Date.now(), first occurrence), by wrapping the SDK's own transport (`httpFetch`)
// in its `fetch` option: the worker runs as users run it, plus a map insert per event.
// It also keeps each delivery's dispatchedAt, the moment the engine published the message.
// IPC: → { type: 'ready' } once started; 'collect' → { type: 'times', received, accepted, published, stats };
// 'stop' → stops gracefully (drains), then → { type: 'stopped', received, accepted, published, stats } and exits.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWorker, httpFetch } from '../../libs/worker-sdk/dist/index.js';

// Every slot's long-poll listens on the worker's one abort signal: more than 10 slots trip
// Node's MaxListenersExceededWarning, which says nothing about the run.
setMaxListeners(0);

const config = JSON.parse(process.argv[2]);
const received = new Map(); // stageId -> ms when its pull answered with a delivery
const accepted = new Map(); // stageId -> ms when its result got 202
const leased = new Map(); // stageId -> ms when the worker held its lease (pull with lease, or lease/acquire)
const published = new Map(); // stageId -> the message's dispatchedAt (ms): when the engine published it
const logged = { warn: 0, error: 0 };

const STAGE_ID = /"stageId":(\d+)/;
const DISPATCHED_AT = /"dispatchedAt":"([^"]+)"/;
const LEASED_ON_PULL = /"lease":\{"acquired":true/;
const ACQUIRED = /"acquired":true/;
const timedFetch = async (url, init) => {
  const res = await httpFetch(url, init);
  const at = Date.now();
  if (res.status === 200 && url.endsWith('/jobs/pull')) {
    // The body is read whole already; the payload's stageId is its first one.
    const text = await res.text();
    const stageId = Number(STAGE_ID.exec(text)?.[1]);
    if (!received.has(stageId)) {
      received.set(stageId, at);
      published.set(stageId, Date.parse(DISPATCHED_AT.exec(text)?.[1] ?? ''));
    }
    if (LEASED_ON_PULL.test(text) && !leased.has(stageId)) leased.set(stageId, at);
  } else if (res.status === 200 && url.endsWith('/lease/acquire')) {
    const stageId = Number(url.split('/stages/')[1].split('/')[0]);
    if (ACQUIRED.test(await res.text()) && !leased.has(stageId)) leased.set(stageId, at);
  } else if (res.status === 202 && url.endsWith('/result')) {
    const stageId = Number(url.split('/stages/')[1].split('/')[0]);
    if (!accepted.has(stageId)) accepted.set(stageId, at);
  }
  return res;
};

let tracing;
if (config.tracing) {
  // With tracing, the worker exports its spans (handler spans) like the services do.
  tracing = await import('../../libs/telemetry/dist/index.js');
  await tracing.startTracing({ serviceName: 'bench-worker', env: process.env });
}

const worker = createWorker({
  baseUrl: config.apiUrl,
  workerBaseUrl: config.workerUrl,
  apiKey: config.apiKey,
  instanceId: config.instanceId,
  // handlerMs (the fairness bench): each stage holds its slot that long, so a capacity binds;
  // otherwise the handler is instant.
  handlers: {
    work: config.handlerMs
      ? async (ctx) => {
          await sleep(config.handlerMs);
          return ctx.input;
        }
      : async (ctx) => ctx.input,
  },
  concurrency: config.slots,
  waitSeconds: 20,
  fetch: timedFetch,
  logger: {
    debug() {},
    info() {},
    warn: (...a) => {
      logged.warn++;
      if (logged.warn <= 5)
        console.error(`[${config.instanceId}] warn`, ...a.map((x) => JSON.stringify(x)));
    },
    error: (...a) => {
      logged.error++;
      console.error(`[${config.instanceId}] error`, ...a.map((x) => JSON.stringify(x)));
    },
  },
});

const times = () => ({
  received: [...received],
  accepted: [...accepted],
  leased: [...leased],
  published: [...published],
  stats: { ...worker.stats, warnings: logged.warn, errors: logged.error },
});

let stopping;
async function stop() {
  stopping ??= (async () => {
    await worker.stop({ reason: 'bench phase over' });
    if (tracing) await tracing.shutdownTracing();
  })();
  return stopping;
}

process.on('message', (msg) => {
  if (msg?.type === 'collect') process.send({ type: 'times', ...times() });
  else if (msg?.type === 'stop') {
    stop()
      .then(() => process.send({ type: 'stopped', ...times() }, () => process.exit(0)))
      .catch((err) => {
        console.error(`[${config.instanceId}] stop failed`, err);
        process.exit(1);
      });
  }
});
// The bench went away: stop, then leave.
process.on('disconnect', () => {
  stop().finally(() => process.exit(0));
});

try {
  await worker.start();
  process.send({ type: 'ready' });
} catch (err) {
  process.send({ type: 'error', message: String(err?.stack ?? err) }, () => process.exit(1));
}
