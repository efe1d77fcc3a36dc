// The worker: bootstrap, one pull loop per handler slot (a slot pulls only while it is free,
// round-robin over the queues), heartbeat and events in the background, drain on stop.
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { MalformedDeliveryError, WorkerClient } from './client.js';
import { describe, isStatus, ProtocolError, WorkerStoppingError } from './errors.js';
import { EventBatcher } from './events.js';
import { JobRunner } from './job.js';
import type { Counters, Delivered } from './job.js';
import { createJsonLogger, safeLogger } from './logger.js';
import type { Logger } from './logger.js';
import { resolveOptions } from './options.js';
import type { ResolvedOptions, WorkerOptions } from './options.js';
import { queueName } from './protocol.js';
import type { BootstrapResponse, PullJobResponse } from './protocol.js';
import { Rotation } from './rotation.js';
import type { Route } from './rotation.js';
import { Session } from './session.js';
import { onSignals } from './signals.js';
import type { StageHandler, StopOptions, Worker, WorkerState, WorkerStats } from './types.js';
import { backoffDelay, sleep, truncate, within } from './util.js';
import { SDK_VERSION } from './version.js';

class PipelineWorker implements Worker {
  private readonly logger: Required<Logger>;
  private readonly client: WorkerClient;
  private readonly session: Session;
  private readonly events: EventBatcher;
  private readonly runner: JobRunner;
  private readonly counters: Counters = { inFlight: 0, processed: 0, failed: 0 };
  private readonly startAbort = new AbortController();
  private readonly pullAbort = new AbortController();
  private readonly stopAbort = new AbortController();
  private readonly abandonAbort = new AbortController();
  private current: WorkerState = 'idle';
  private rotation: Rotation | undefined;
  private pausedUntil = 0;
  private loops: Promise<void>[] = [];
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(private readonly o: ResolvedOptions) {
    // Every slot's requests listen on these signals: with more than a handful of slots Node would
    // warn of a listener leak that is none.
    setMaxListeners(
      10 + 4 * o.concurrency,
      this.startAbort.signal,
      this.pullAbort.signal,
      this.stopAbort.signal,
      this.abandonAbort.signal,
    );
    this.logger = safeLogger(o.logger ?? createJsonLogger({ base: { instanceId: o.instanceId } }));
    this.client = new WorkerClient({
      baseUrl: o.workerBaseUrl,
      apiKey: o.apiKey,
      requestTimeoutMs: o.requestTimeoutMs,
      fetch: o.fetch,
    });
    this.session = new Session(this.client, this.logger, {
      request: {
        instanceId: o.instanceId,
        handlers: [...o.handlers.keys()],
        sdkVersion: `@po/worker-sdk ${SDK_VERSION}`,
        hostname: truncate(hostname(), 255),
        ...(o.workerName === undefined ? {} : { workerName: o.workerName }),
        ...(o.metadata === undefined ? {} : { metadata: o.metadata }),
      },
      startupAttempts: o.startupAttempts,
      retryBaseDelayMs: o.retryBaseDelayMs,
      retryMaxDelayMs: o.retryMaxDelayMs,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
    });
    this.events = new EventBatcher(
      (events) =>
        this.session.call((token, workerId) => this.client.events(token, { workerId, events })),
      this.logger,
      { enabled: o.sendEvents, flushIntervalMs: o.eventFlushIntervalMs },
    );
    this.runner = new JobRunner({
      client: this.client,
      session: this.session,
      events: this.events,
      logger: this.logger,
      options: o,
      counters: this.counters,
      stopSignal: this.stopAbort.signal,
      abandonSignal: this.abandonAbort.signal,
    });
  }

  get state(): WorkerState {
    return this.current;
  }

  get stats(): WorkerStats {
    return {
      state: this.current,
      workerId: this.session.workerId,
      queues: (this.rotation?.routes ?? []).map((r) => r.queue),
      ...this.counters,
    };
  }

  start(): Promise<void> {
    if (this.current !== 'idle') {
      return Promise.reject(new Error(`start() needs an idle worker; this one is ${this.current}`));
    }
    this.current = 'starting';
    this.starting = this.doStart();
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const signal = this.startAbort.signal;
    let rotation: Rotation;
    try {
      const routes = this.bind(await this.session.bootstrap(signal));
      rotation = new Rotation(routes, this.o.concurrency, this.o.waitSeconds);
      this.rotation = rotation;
    } catch (err) {
      this.current = 'stopped';
      if (signal.aborted) {
        throw new Error('stop() was called while the worker was starting', { cause: err });
      }
      this.logger.error('bootstrap failed', { error: describe(err) });
      throw err;
    }
    this.current = 'running';
    if (signal.aborted) throw new Error('stop() was called while the worker was starting');
    this.events.start();
    this.session.startHeartbeat(() => ({ ...this.counters }));
    this.events.push({
      kind: 'started',
      data: {
        concurrency: this.o.concurrency,
        handlers: [...this.o.handlers.keys()],
        sdkVersion: SDK_VERSION,
      },
    });
    this.logger.info('worker started', {
      workerId: this.session.workerId,
      queues: rotation.routes.map((r) => r.queue),
      concurrency: this.o.concurrency,
    });
    for (let slot = 0; slot < this.o.concurrency; slot++) {
      this.loops.push(this.slotLoop(rotation));
    }
  }

  /** Pairs each handler with its queue (the bootstrap lists them in handler order). */
  private bind(info: BootstrapResponse): Route[] {
    const names = [...this.o.handlers.keys()];
    if (info.queues.length !== names.length) {
      throw new ProtocolError(
        `bootstrap returned ${info.queues.length} queues for ${names.length} handlers`,
      );
    }
    return names.map((handler, i) => {
      const queue = info.queues[i] ?? queueName(info.applicationId, handler);
      return { queue, handler, fn: this.o.handlers.get(handler) as StageHandler };
    });
  }

  /** One handler slot: pull (only while free), run the job, repeat. Never rejects. */
  private async slotLoop(rotation: Rotation): Promise<void> {
    const signal = this.pullAbort.signal;
    let failures = 0;
    // The delivery the last result brought (decision 0100), with the route it was pulled for.
    let carried: { delivered: Delivered; route: Route } | undefined;
    while (this.current === 'running') {
      let route: Route;
      let delivered: Delivered;
      let backlog: boolean;
      if (carried) {
        ({ delivered, route } = carried);
        carried = undefined;
        backlog = true;
      } else {
        const paused = this.pausedUntil - Date.now();
        if (paused > 0) {
          await sleep(paused, signal);
          continue;
        }
        const taken = rotation.take();
        route = taken.route;
        // Monotonic: a lease the pull brings is counted from here (decision 0118).
        const asked = performance.now();
        let delivery: PullJobResponse | null;
        try {
          // The gateway acquires the lease with the delivery: one call fewer per stage (decision 0098).
          delivery = await this.client.pull(route.queue, taken.wait, signal, this.session.workerId);
          failures = 0;
        } catch (err) {
          if (this.current !== 'running') break;
          await this.pullFailed(err, route, failures++);
          continue;
        } finally {
          taken.done();
        }
        if (delivery === null) {
          if (taken.wait === 0) await sleep(500, signal);
          continue;
        }
        delivered = { delivery, sentAt: asked };
        // A pull that waited for a place of its handler's limit, not for a message, also found a
        // backlog: the gateway says so (decision 0132).
        backlog = performance.now() - asked <= BACKLOG_PULL_MS || delivery.backlog === true;
      }
      if (this.current !== 'running') {
        // The pull answered as stop() began: hand the delivery back at once.
        await this.client.ack(delivered.delivery.token, true).catch(() => undefined);
        break;
      }
      rotation.busy += 1;
      // While there is a backlog, the result also pulls this slot's next delivery (decision 0100):
      // one request per stage instead of two. Without one it would only find the queue empty.
      const nextRoute = backlog ? rotation.pickNext() : undefined;
      try {
        const next = await this.runner.run(delivered, route.handler, route.fn, nextRoute?.queue);
        if (next && nextRoute) carried = { delivered: next, route: nextRoute };
      } catch (err) {
        this.logger.error('unexpected error while running a delivery', { error: describe(err) });
      } finally {
        rotation.busy -= 1;
      }
    }
    if (carried) {
      await this.client.ack(carried.delivered.delivery.token, true).catch(() => undefined);
    }
  }

  private async pullFailed(err: unknown, route: Route, failures: number): Promise<void> {
    if (err instanceof MalformedDeliveryError) {
      this.logger.error('malformed delivery; acknowledging it so it is not redelivered', {
        queue: route.queue,
        error: err.message,
      });
      await this.client.ack(err.token).catch(() => undefined);
      return;
    }
    if (isStatus(err, 429)) {
      // The gateway holds too many unacknowledged deliveries: every slot waits.
      const delay = err.retryAfterMs ?? 1000;
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + delay);
      this.logger.debug('pull answered 429; backing off', { delayMs: delay });
      return;
    }
    const delay = backoffDelay(failures, this.o.retryBaseDelayMs, this.o.retryMaxDelayMs);
    this.logger.warn('pull failed; backing off', {
      queue: route.queue,
      delayMs: delay,
      error: describe(err),
    });
    await sleep(delay, this.pullAbort.signal);
  }

  stop(options: StopOptions = {}): Promise<void> {
    this.stopping ??= this.doStop(options);
    return this.stopping;
  }

  private async doStop(options: StopOptions): Promise<void> {
    const reason = truncate(options.reason ?? 'stop() called', 1000);
    if (this.current === 'starting') {
      this.startAbort.abort();
      await this.starting?.catch(() => undefined);
    }
    if (this.current !== 'running') {
      this.current = 'stopped';
      return;
    }
    this.current = 'stopping';
    this.pullAbort.abort();
    this.events.push({
      kind: 'stopping',
      message: reason,
      data: { inFlight: this.counters.inFlight },
    });
    this.logger.info('worker stopping; draining running handlers', {
      reason,
      inFlight: this.counters.inFlight,
    });
    const all = Promise.all(this.loops);
    const drainMs = options.timeoutMs ?? this.o.drainTimeoutMs;
    if ((await within(all, drainMs)) === undefined) {
      this.logger.warn('drain timeout passed; aborting running handlers', {
        inFlight: this.counters.inFlight,
      });
      this.stopAbort.abort(new WorkerStoppingError());
      if ((await within(all, this.o.abortGraceMs)) === undefined) {
        this.logger.warn('handlers did not finish; shutting down without them', {
          inFlight: this.counters.inFlight,
        });
      }
    }
    // The slots acknowledge in the background: a stopping worker still acks what it ran.
    await within(this.runner.settled(), Math.min(this.o.requestTimeoutMs, 5000));
    this.abandonAbort.abort();
    this.events.push({ kind: 'stopped', message: reason, data: { ...this.counters } });
    await this.events.close(Math.min(this.o.requestTimeoutMs, 5000));
    this.session.stopHeartbeat();
    try {
      await this.session.shutdown(reason);
    } catch (err) {
      this.logger.warn('shutdown call failed', { error: describe(err) });
    }
    this.current = 'stopped';
    this.logger.info('worker stopped', {
      processed: this.counters.processed,
      failed: this.counters.failed,
    });
  }

  stopOnSignals(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    return onSignals(signals, (reason) => this.stop({ reason }), this.logger);
  }
}

/** Creates a worker. Throws WorkerConfigError (listing every problem) for invalid options. */
/**
 * A pull answered this fast found its message waiting: the queue has a backlog, so the slot's
 * result asks for the next delivery too (decision 0100). A slower answer waited for its message.
 */
const BACKLOG_PULL_MS = 50;

export function createWorker(options: WorkerOptions): Worker {
  return new PipelineWorker(resolveOptions(options));
}
