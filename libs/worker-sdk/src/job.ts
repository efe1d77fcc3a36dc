// One delivery, from lease to ack: acquire the lease (refused → ack without executing), run the
// handler while renewing the lease, post the result (the same body again on an unknown outcome,
// never re-running the handler) while still renewing, and ack only after the 202. A lost lease
// aborts the handler, withholds its result and, after abortGraceMs, frees the slot (decision 0118).
import type { WorkerClient } from './client.js';
import { acquireLease, type Granted } from './acquire.js';
import { createCollected, createContext } from './context.js';
import { ApiError, describe, isRetryable, isStatus, StageTimeoutError } from './errors.js';
import type { EventBatcher } from './events.js';
import { LeaseKeeper } from './lease.js';
import type { LogFields, Logger } from './logger.js';
import type { ResolvedOptions } from './options.js';
import { buildResultBody, fromReturn, fromThrow } from './outcome.js';
import type { Outcome } from './outcome.js';
import type { PullJobResponse, StageResultSubmit } from './protocol.js';
import type { Session } from './session.js';
import {
  deliveryTraceparent,
  failHandlerSpan,
  loadOpenTelemetry,
  startHandlerSpan,
} from './tracing.js';
import type { StageHandler } from './types.js';
import { backoffDelay, sleep } from './util.js';

export interface Counters {
  inFlight: number;
  processed: number;
  failed: number;
}

export interface JobDeps {
  client: WorkerClient;
  session: Session;
  events: EventBatcher;
  logger: Required<Logger>;
  options: ResolvedOptions;
  counters: Counters;
  /** Aborts when stop() gives up waiting; running handlers see it on ctx.signal. */
  stopSignal: AbortSignal;
  /** Aborts when stop() is done waiting for deliveries: retries end there. */
  abandonSignal: AbortSignal;
}

type Delivery = 'accepted' | 'lease_lost' | 'rejected' | 'undelivered';

/**
 * A delivery, with the performance.now() at which the request that brought it (a pull, or the
 * result that carried it) was sent: a lease it carries is counted from then (decision 0118).
 */
export interface Delivered {
  delivery: PullJobResponse;
  sentAt: number;
}

/** The pull a result carries (decision 0100), acquiring the lease as a pull would. */
function nextRequest(queue: string, workerId: string | undefined): StageResultSubmit['next'] {
  return workerId === undefined ? { queue } : { queue, lease: { workerId } };
}

/**
 * The handler's outcome; undefined once its lease was lost and it has not returned within
 * `graceMs`. Such a handler keeps running, but a retry may run elsewhere: it has no claim on a slot.
 */
function outcomeUnlessAbandoned(
  running: Promise<Outcome>,
  lost: AbortSignal,
  graceMs: number,
): Promise<Outcome | undefined> {
  return new Promise((resolve) => {
    let grace: NodeJS.Timeout | undefined;
    const onLost = () => {
      grace = setTimeout(() => resolve(undefined), graceMs);
    };
    if (lost.aborted) onLost();
    else lost.addEventListener('abort', onLost, { once: true });
    void running.then((outcome) => {
      clearTimeout(grace);
      lost.removeEventListener('abort', onLost);
      resolve(outcome);
    });
  });
}

export class JobRunner {
  /** Acks still on their way: the slot pulls again without waiting for them. */
  private readonly acking = new Set<Promise<void>>();

  constructor(private readonly deps: JobDeps) {}

  /** Resolves once every ack sent so far has an answer (stop waits for it). */
  async settled(): Promise<void> {
    while (this.acking.size > 0) await Promise.all([...this.acking]);
  }

  /** Sends an ack in the background; a failure is already logged by ack(). */
  private ackLater(token: string, requeue: boolean, fields: LogFields): void {
    const sent = this.ack(token, requeue, fields).finally(() => this.acking.delete(sent));
    this.acking.add(sent);
  }

  /**
   * Runs one delivery to its ack. With `nextQueue`, the result asks the gateway to pull that queue
   * once more (decision 0100): the delivery it brought is returned for the slot to run next.
   */
  async run(
    { delivery, sentAt }: Delivered,
    handlerName: string,
    handler: StageHandler,
    nextQueue?: string,
  ): Promise<Delivered | null> {
    const m = delivery.payload;
    const fields: LogFields = {
      stageId: m.stageId,
      pipelineId: m.pipelineId,
      executionId: m.executionId,
      handler: handlerName,
    };
    const granted: Granted | 'unavailable' | 'rejected' = delivery.lease
      ? { lease: delivery.lease, sentAt }
      : await acquireLease(this.deps, delivery, fields);
    if (granted === 'unavailable') {
      this.ackLater(delivery.token, true, fields);
      return null;
    }
    if (granted === 'rejected') {
      this.ackLater(delivery.token, false, fields);
      return null;
    }
    const { lease } = granted;
    if (!lease.acquired) {
      this.deps.logger.info('lease refused; acknowledging the delivery without executing', {
        ...fields,
        reason: lease.reason,
      });
      this.ackLater(delivery.token, false, fields);
      return null;
    }
    const attempt = lease.attempt ?? m.previousAttempts + 1;
    const { counters } = this.deps;
    counters.inFlight += 1;
    try {
      return await this.execute(
        delivery,
        granted.sentAt,
        handlerName,
        handler,
        attempt,
        { ...fields, attempt },
        nextQueue,
      );
    } finally {
      counters.inFlight -= 1;
    }
  }

  private async execute(
    delivery: PullJobResponse,
    leaseSentAt: number,
    handlerName: string,
    handler: StageHandler,
    attempt: number,
    fields: LogFields,
    nextQueue: string | undefined,
  ): Promise<Delivered | null> {
    const { client, session, events, logger, options, counters, stopSignal } = this.deps;
    const m = delivery.payload;
    const ids = { stageId: m.stageId, pipelineId: m.pipelineId };
    const data = { executionId: m.executionId, attempt, handler: handlerName };
    const controller = new AbortController();
    // Optional tracing (tracing.ts): the handler span, child of the delivery's traceparent.
    const otel = await loadOpenTelemetry();
    const parent = deliveryTraceparent(delivery.headers);
    const traced = otel
      ? startHandlerSpan(otel, parent, {
          'pipeline.id': m.pipelineId,
          'stage.id': m.stageId,
          'stage.handler': handlerName,
          'execution.id': m.executionId,
          'stage.attempt': attempt,
        })
      : undefined;
    const traceparent = traced ? traced.traceparent : parent;
    const keeper = new LeaseKeeper({
      intervalMs: options.leaseRenewIntervalMs,
      leaseMs: options.leaseDurationMs,
      grantSentAt: leaseSentAt,
      logger,
      fields,
      renew: () =>
        session.call((token, workerId) =>
          client.renewLease(
            token,
            m.stageId,
            { executionId: m.executionId, workerId },
            traceparent,
          ),
        ),
      onLost: (error) => controller.abort(error),
    });
    const onStop = () => controller.abort(stopSignal.reason);
    const timeout =
      m.timeOutSeconds === null
        ? undefined
        : setTimeout(
            () => controller.abort(new StageTimeoutError(m.timeOutSeconds ?? 0)),
            m.timeOutSeconds * 1000,
          );
    keeper.start();
    stopSignal.addEventListener('abort', onStop, { once: true });
    if (stopSignal.aborted) onStop();
    events.push({ kind: 'stage_started', ...ids, data });
    logger.debug('stage started', fields);

    const started = Date.now();
    const collected = createCollected();
    const ctx = createContext({
      delivery,
      handler: handlerName,
      attempt,
      signal: controller.signal,
      collected,
      traceparent,
    });
    const running = (async () =>
      fromReturn(
        await (otel && traced
          ? otel.context.with(traced.context, () => handler(ctx))
          : handler(ctx)),
      ))().catch((err: unknown) =>
      fromThrow(err, controller.signal.aborted ? controller.signal.reason : undefined),
    );
    const outcome = await outcomeUnlessAbandoned(running, keeper.signal, options.abortGraceMs);
    clearTimeout(timeout);
    stopSignal.removeEventListener('abort', onStop);
    if (outcome === undefined) {
      logger.warn('handler ignored its lost lease; freeing its slot and dropping its result', {
        ...fields,
        graceMs: options.abortGraceMs,
      });
    }
    const durationMs = Date.now() - started;
    if (traced) {
      if (outcome === undefined) failHandlerSpan(traced.span, 'LEASE_LOST');
      else if (!outcome.isSuccess)
        failHandlerSpan(traced.span, outcome.errorCode ?? 'HANDLER_ERROR');
      traced.span.end();
    }

    let result: Delivery = 'lease_lost';
    let ackAnswered = false;
    let next: Delivered | null = null;
    if (outcome !== undefined && keeper.lost === undefined) {
      // The gateway that served the pull acknowledges it once the result is accepted (decision 0098),
      // and pulls for this slot again when asked (decision 0100).
      const body: StageResultSubmit = {
        ...buildResultBody(m, attempt, outcome, collected),
        ackToken: delivery.token,
        ...(nextQueue === undefined ? {} : { next: nextRequest(nextQueue, session.workerId) }),
      };
      const posted = await this.postResult(body, keeper, fields, traceparent);
      // acked false: that gateway does not hold the token, so an ack of ours would be refused too.
      ackAnswered = typeof posted === 'object' || posted === 'answered';
      result = ackAnswered ? 'accepted' : (posted as Delivery);
      if (typeof posted === 'object') next = posted.next;
    }
    keeper.stop();

    if (result === 'accepted' && outcome?.isSuccess === true) {
      counters.processed += 1;
      events.push({
        kind: 'stage_completed',
        ...ids,
        data: { ...data, durationMs, waitingForApproval: outcome.isWaitingForApproval },
      });
      logger.debug('stage completed', { ...fields, durationMs });
    } else if (result === 'accepted') {
      counters.failed += 1;
      events.push({
        kind: 'stage_failed',
        ...ids,
        data: { ...data, durationMs, errorCode: outcome?.errorCode ?? null },
      });
      logger.warn('stage failed', { ...fields, errorCode: outcome?.errorCode, durationMs });
    } else {
      counters.failed += 1;
      if (result === 'lease_lost') {
        const reason = keeper.lost ?? 'refused';
        events.push({
          kind: 'lease_lost',
          ...ids,
          message: `lease lost: ${reason}`,
          data: { ...data, reason },
        });
      } else {
        events.push({ kind: 'error', ...ids, message: `result ${result}`, data });
      }
    }
    // Ack only now: after the 202, or when no result will ever be sent for this delivery. The slot
    // goes back to pulling while the ack travels.
    if (!ackAnswered) this.ackLater(delivery.token, false, fields);
    return next;
  }

  /**
   * Posts the same body until 202, a definitive refusal, a lost lease, or the retry deadline. The
   * keeper goes on renewing meanwhile, so an outage longer than the lease (a broker down: 503) does
   * not turn finished work into LEASE_EXPIRED.
   */
  private async postResult(
    body: StageResultSubmit,
    keeper: LeaseKeeper,
    fields: LogFields,
    traceparent: string | undefined,
  ): Promise<Delivery | 'answered' | { next: Delivered | null }> {
    const { client, session, logger, options } = this.deps;
    const deadline = Date.now() + options.resultRetryTimeoutMs;
    // Built at the first retry only: most results are accepted at once.
    let waitEnds: AbortSignal | undefined;
    for (let i = 0; ; i++) {
      if (keeper.lost !== undefined) return 'lease_lost';
      const sentAt = performance.now();
      try {
        const accepted = await session.call((token) =>
          client.submitResult(token, body, traceparent),
        );
        // 'answered': the gateway knew ackToken (acked true or false); 'accepted': an older one.
        if (accepted.acked === undefined) return 'accepted';
        if (accepted.next === undefined) return 'answered';
        return { next: accepted.next === null ? null : { delivery: accepted.next, sentAt } };
      } catch (err) {
        if (!isRetryable(err)) {
          logger.error('result rejected by the server', { ...fields, error: describe(err) });
          return 'rejected';
        }
        const delay =
          err instanceof ApiError && err.retryAfterMs !== undefined
            ? err.retryAfterMs
            : backoffDelay(i, options.retryBaseDelayMs, options.retryMaxDelayMs);
        if (Date.now() + delay > deadline) {
          logger.error('result could not be delivered; giving up', {
            ...fields,
            error: describe(err),
          });
          return 'undelivered';
        }
        logger.warn('result outcome unknown; sending the same result again', {
          ...fields,
          retry: i + 1,
          delayMs: delay,
          error: describe(err),
        });
        waitEnds ??= AbortSignal.any([this.deps.abandonSignal, keeper.signal]);
        if (!(await sleep(delay, waitEnds))) {
          if (keeper.lost !== undefined) return 'lease_lost';
          logger.error('worker stopped before the result was delivered', fields);
          return 'undelivered';
        }
      }
    }
  }

  /** Acks on the gateway that served the pull (same base URL; relies on sticky routing). */
  private async ack(token: string, requeue: boolean, fields: LogFields): Promise<void> {
    const { client, logger, options } = this.deps;
    for (let i = 0; i < 3; i++) {
      try {
        await client.ack(token, requeue);
        return;
      } catch (err) {
        if (isStatus(err, 404)) {
          // Expired, already acknowledged (a retried ack), or held by another gateway process.
          const message = 'delivery token not held by the gateway';
          if (i === 0) logger.warn(message, fields);
          else logger.debug(message, fields);
          return;
        }
        if (!isRetryable(err) || i === 2) {
          logger.warn('ack failed; the delivery returns after the visibility timeout', {
            ...fields,
            error: describe(err),
          });
          return;
        }
        const delay = backoffDelay(i, options.retryBaseDelayMs, options.retryMaxDelayMs);
        if (!(await sleep(delay, this.deps.abandonSignal))) return;
      }
    }
  }
}
