import {
  expiredExecutions,
  handlerQueueSettings,
  pipelinesDueForDispatch,
  pipelinesWithThrottledStages,
  sqlOf,
} from '@po/db';
import { renewLeasesAfterOutage, type EngineItem } from '@po/engine';
import { LEASE_SECONDS } from '@po/domain';
import { stageQueueName } from '@po/contracts';
import type { DispatcherDeps } from './deps.js';
import { startLostMessageWalk } from './lost-messages.js';

const BATCH = 200;
/** Pages of expired executions one sweep reads past those whose result still waits. */
const EXPIRY_PAGES = 5;

export interface SweeperOptions {
  intervalMs: number;
  /** A requested pass this old was not handled through its event: the sweep takes it. */
  eventGraceMs: number;
  /** A published, never leased execution whose message is gone from Redis after this long is republished. */
  lostMessageAfterSeconds: number;
}

/** What one sweeper remembers between sweeps: whether it could see what expired (decision 0120). */
export interface SweeperState {
  /** performance.now() when the last expiry step that could read PostgreSQL and Redis began (at first: when the sweeper began). */
  expirySeenAt: number;
  /** An expiry step failed since then: an outage, whose lapsed leases get a renewal before any is expired. */
  expiryInterrupted: boolean;
}

export const newSweeperState = (): SweeperState => ({ expirySeenAt: performance.now(), expiryInterrupted: false });

/**
 * The safety net of addendum §9 and the clock of §11, by the database clock: expires leases and
 * handler timeouts, runs passes whose event was lost or whose retry fell due, and offers freed
 * slots to Throttled stages. Messages Redis lost are the lost-message walk's (lost-messages.ts),
 * which runs beside it: a walk over thousands of executions never holds an expiry up.
 * Every step and every item stands on its own: one that fails is logged and retried next sweep, and
 * never stops the others. Replicas skip pipelines another holds.
 */
export async function sweepOnce(deps: DispatcherDeps, options: SweeperOptions, state: SweeperState = newSweeperState()): Promise<void> {
  const sql = sqlOf(deps.db);
  await step(deps, 'expire executions', async () => {
    const started = performance.now();
    try {
      await expireExecutions(deps, state);
    } catch (err) {
      state.expiryInterrupted = true;
      throw err;
    }
    state.expirySeenAt = started;
  });
  await step(deps, 'due passes', async () => {
    const due = await pipelinesDueForDispatch(sql, options.eventGraceMs, BATCH);
    // Throttled stages (APP_MAX_ACTIVE_STAGES, keys, handler limits, decision 0132) are offered the
    // room that freed up, and rate buckets refill, without an event.
    const throttled = await pipelinesWithThrottledStages(sql, BATCH);
    const ids = [...new Set([...due, ...throttled])];
    await runEach(deps, ids.map((pipelineId) => ({ kind: 'pass', pipelineId })), { skipLocked: true });
  });
  await step(deps, 'handler queue settings', () => holdQueueSettings(deps));
}

/** Handler settings a sweep holds the StageNext queues to; more are left for PUT's own call. */
const QUEUE_SETTINGS_PER_SWEEP = 1000;

/**
 * A handler's pause and maxConcurrent act on its StageNext queue in Redis too (decision 0132).
 * api-gateway applies a change after its commit; this puts right what that call or Redis lost (a
 * failed call, a FLUSHALL, a failover to a replica that missed it): PostgreSQL is the truth.
 */
async function holdQueueSettings(deps: DispatcherDeps): Promise<void> {
  const settings = await handlerQueueSettings(sqlOf(deps.db), QUEUE_SETTINGS_PER_SWEEP);
  if (settings.length === 0) return;
  const queues = settings.map((s) => stageQueueName(s.applicationId, s.handler));
  const states = await deps.queueSettings.states(queues);
  for (const [i, s] of settings.entries()) {
    const queue = queues[i]!;
    if (states[i]!.paused !== s.paused) {
      await deps.queueSettings.setPaused(queue, s.paused);
      deps.logger.info({ queue, paused: s.paused }, 'StageNext queue pause state put back to the handler setting');
    }
    if (states[i]!.concurrency !== s.maxConcurrent) {
      await deps.queueSettings.setConcurrency(queue, s.maxConcurrent);
      deps.logger.info({ queue, maxConcurrent: s.maxConcurrent }, 'StageNext queue concurrency put back to the handler setting');
    }
  }
}

/**
 * Ends executions whose lease or handler timeout passed, a page at a time in turns per application.
 * A result that got 202 keeps its execution from expiring while it waits on stage-results (a slow
 * or restarting result-consumer does not turn finished work into LEASE_EXPIRED); if Redis lost it,
 * the execution expires like any other. Those passed over do not hold the others up: the next page
 * leaves them out (issue 28).
 *
 * After an outage (an earlier step failed), once PostgreSQL and Redis both answer again, the leases
 * that lapsed meanwhile are renewed once before anything expires: their workers' renewals may not
 * have got through, and a lease granted a moment before the outage is no proof of a dead worker
 * (decision 0120). Handler timeouts are not moved.
 */
async function expireExecutions(deps: DispatcherDeps, state: SweeperState): Promise<void> {
  const seen: string[] = [];
  for (let page = 0; page < EXPIRY_PAGES; page += 1) {
    let { expired, awaited } = await readExpired(deps, seen);
    // Both answered: whatever interrupted the sweeper is over.
    if (state.expiryInterrupted) {
      await renewAfterOutage(deps, state);
      ({ expired, awaited } = await readExpired(deps, seen));
    }
    for (const e of expired) seen.push(e.executionId);
    const items: EngineItem[] = expired
      .filter((e) => !awaited.has(e.executionId))
      .map((e) => ({ kind: 'expiry', pipelineId: e.pipelineId, stageId: e.stageId, executionId: e.executionId }));
    await runEach(deps, items, {});
    if (expired.length < BATCH || awaited.size === 0) return;
  }
}

/** A page of expired executions (none of `seen`), and which of them have a result waiting on the results queues. */
async function readExpired(deps: DispatcherDeps, seen: readonly string[]) {
  const expired = await expiredExecutions(sqlOf(deps.db), BATCH, seen);
  const leased = expired.filter((e) => e.attempt !== null).map((e) => ({ applicationId: e.applicationId, executionId: e.executionId, attempt: e.attempt!, workerId: e.leaseOwner }));
  return { expired, awaited: await deps.results.waiting(leased) };
}

async function renewAfterOutage(deps: DispatcherDeps, state: SweeperState): Promise<void> {
  const outageMs = performance.now() - state.expirySeenAt;
  const renewed = await renewLeasesAfterOutage(sqlOf(deps.db), outageMs, LEASE_SECONDS);
  state.expiryInterrupted = false;
  deps.logger.warn({ renewed, outageSeconds: Math.round(outageMs / 1000) }, 'expiry resumed after an outage; the leases that lapsed meanwhile were renewed once');
}

/** Runs engine items as one batch; when the batch fails, each item on its own. */
async function runEach(deps: DispatcherDeps, items: EngineItem[], options: { skipLocked?: boolean }): Promise<void> {
  if (items.length === 0) return;
  try {
    await deps.engine.run(items, options);
  } catch (err) {
    deps.logger.warn({ err, items: items.length }, 'sweep batch failed; running its items one by one');
    for (const one of items) await item(deps, one.kind, one.pipelineId, () => deps.engine.run([one], options));
  }
}

/** A step failing on every sweep (Redis or PostgreSQL away) is logged once per this interval, with how many times it failed meanwhile. */
const STEP_FAILURE_LOG_MS = 10_000;
const stepFailures = new Map<string, { loggedAt: number; since: number }>();

async function step(deps: DispatcherDeps, name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const seen = stepFailures.get(name);
    if (seen && Date.now() - seen.loggedAt < STEP_FAILURE_LOG_MS) {
      seen.since += 1;
      return;
    }
    deps.logger.error({ err, step: name, failedSinceLastLog: seen?.since ?? 0 }, 'sweep step failed; retried next sweep');
    stepFailures.set(name, { loggedAt: Date.now(), since: 0 });
  }
}

async function item(deps: DispatcherDeps, what: string, id: string | number, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    deps.logger.error({ err, what, id }, 'sweep item failed; retried next sweep');
  }
}

/** Runs sweepOnce every interval, and the lost-message walk beside it, until stopped. */
export function startSweeper(deps: DispatcherDeps, options: SweeperOptions): { stop(): Promise<void> } {
  const walk = startLostMessageWalk(deps, {
    lostMessageAfterSeconds: options.lostMessageAfterSeconds,
    idleMs: Math.min(5000, options.lostMessageAfterSeconds * 500),
  });
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const state = newSweeperState();
  const tick = () => {
    running = sweepOnce(deps, options, state).finally(() => {
      if (!stopped) timer = setTimeout(tick, options.intervalMs);
    });
  };
  timer = setTimeout(tick, options.intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await Promise.all([running, walk.stop()]);
    },
  };
}
