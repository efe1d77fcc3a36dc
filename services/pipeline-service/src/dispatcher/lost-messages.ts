import { setTimeout as sleep } from 'node:timers/promises';
import { sqlOf, waitingExecutions } from '@po/db';
import { stageQueueName } from '@po/contracts';
import type { DispatcherDeps } from './deps.js';

/**
 * The lost-message walk (decisions 0121, 0124): the Pending executions no worker leased yet are the
 * outbox of StageNext, and this walk is its relay. It reads them in (dispatched_at, id) order, a
 * page of thousands at a time, asks Redis which of their jobs are gone (pipelined EXISTS, one
 * pipeline per queue), and republishes those from their rows (one addBulk per queue). Reads only:
 * no row is locked or written while it talks to Redis.
 *
 * At rest it looks at one page per interval. A page that found lost messages is followed at once
 * by the next, until a page finds none. When Redis says it lost writes (a marker gone or gone back
 * in time: FLUSHALL, a restart without persistence, a lossy failover), the walk starts over and
 * goes through every waiting execution dispatched before the loss was seen, without pause and
 * without waiting for `lostMessageAfterSeconds`: every message Redis held then is suspect. One whose
 * publish was still on its way is added once all the same (the job id is the execution id).
 */

export interface LostMessageOptions {
  /** A published, never leased execution whose message is gone from Redis after this long is republished. */
  lostMessageAfterSeconds: number;
  /** Executions read and checked at once. */
  pageSize?: number;
}

const PAGE_SIZE = 2000;
/** How often Redis is asked whether it lost writes. */
const LOSS_CHECK_EVERY_MS = 1000;
const START = { dispatchedAt: new Date(0), executionId: '00000000-0000-0000-0000-000000000000' };

export interface LostMessageWalk {
  cursor: { dispatchedAt: Date; executionId: string };
  /** A walk over every waiting execution since Redis lost writes: when it began and what it did so far. */
  afterLoss: { startedAt: number; examined: number; republished: number } | null;
}

export const newLostMessageWalk = (): LostMessageWalk => ({ cursor: START, afterLoss: null });

/** Starts the walk over from the first waiting execution, without pause, after Redis lost writes. */
export function walkEverything(walk: LostMessageWalk): void {
  walk.cursor = START;
  walk.afterLoss = { startedAt: performance.now(), examined: 0, republished: 0 };
}

/**
 * One page of the walk. Resolves with what it saw, and whether the walk should go on at once (it
 * found lost messages, or it walks everything after a loss, and the page was not its last).
 */
export async function walkPage(
  deps: DispatcherDeps,
  options: LostMessageOptions,
  walk: LostMessageWalk,
): Promise<{ examined: number; lost: number; republished: number; goOn: boolean }> {
  const size = options.pageSize ?? PAGE_SIZE;
  // After a loss, everything dispatched before it was seen; else what had time to be published.
  const age = walk.afterLoss ? (performance.now() - walk.afterLoss.startedAt) / 1000 : options.lostMessageAfterSeconds;
  const page = await waitingExecutions(sqlOf(deps.db), age, walk.cursor, size);
  const gone = page.waiting.length === 0 ? new Set<string>() : await deps.publisher.missing(page.waiting.map((e) => ({ queue: stageQueueName(e.applicationId, e.handlerName), executionId: e.executionId })));
  const lost = page.waiting.filter((e) => gone.has(e.executionId));
  // A failed publish leaves the cursor where it was: the same page is looked at again.
  const republished = await deps.engine.republishMany(lost);
  walk.cursor = page.next ?? START;
  if (walk.afterLoss) {
    walk.afterLoss.examined += page.waiting.length;
    walk.afterLoss.republished += republished.length;
  }
  if (republished.length > 0) {
    deps.logger.info({ republished: republished.length, executionIds: republished.slice(0, 10) }, 'republished lost StageNext messages');
  }
  const goOn = page.next !== null && (walk.afterLoss !== null || lost.length > 0);
  if (!page.next) finishAfterLoss(deps, walk);
  return { examined: page.waiting.length, lost: lost.length, republished: republished.length, goOn };
}

function finishAfterLoss(deps: DispatcherDeps, walk: LostMessageWalk): void {
  if (!walk.afterLoss) return;
  const { startedAt, examined, republished } = walk.afterLoss;
  walk.afterLoss = null;
  deps.logger.warn({ examined, republished, seconds: Math.round(performance.now() - startedAt) / 1000 }, 'walked every waiting execution after Redis lost writes');
}

/**
 * Runs the walk until stopped: a page every `idleMs` at rest, page after page while it finds lost
 * messages or walks everything after a loss; whether Redis lost writes is asked every second.
 */
export function startLostMessageWalk(deps: DispatcherDeps, options: LostMessageOptions & { idleMs: number }): { stop(): Promise<void> } {
  const walk = newLostMessageWalk();
  const abort = new AbortController();
  const failures = new Map<string, number>();
  const attempt = async (name: string, fn: () => Promise<void>): Promise<boolean> => {
    try {
      await fn();
      failures.delete(name);
      return true;
    } catch (err) {
      // Logged once per 10 s while it keeps failing (Redis or PostgreSQL away).
      const loggedAt = failures.get(name);
      if (loggedAt === undefined || Date.now() - loggedAt >= 10_000) {
        // A master unreachable for a moment (a failover) is expected; a failing walk is not.
        const log = name === 'redis loss check' ? deps.logger.warn.bind(deps.logger) : deps.logger.error.bind(deps.logger);
        log({ err, step: name }, 'lost-message walk step failed; retried');
        failures.set(name, Date.now());
      }
      return false;
    }
  };
  const run = async () => {
    let nextPageAt = performance.now() + options.idleMs;
    let nextCheckAt = 0;
    while (!abort.signal.aborted) {
      if (performance.now() >= nextCheckAt) {
        nextCheckAt = performance.now() + LOSS_CHECK_EVERY_MS;
        await attempt('redis loss check', async () => {
          if (!(await deps.redisLoss.check())) return;
          deps.logger.warn('Redis lost writes (a marker is gone or older than written): walking every waiting execution');
          walkEverything(walk);
          nextPageAt = 0;
        });
      }
      if (performance.now() >= nextPageAt) {
        let goOn = false;
        const ok = await attempt('lost messages', async () => {
          ({ goOn } = await walkPage(deps, options, walk));
        });
        // A failed page is tried again soon while walking everything after a loss, else at the next interval.
        nextPageAt = goOn ? 0 : performance.now() + (ok || !walk.afterLoss ? options.idleMs : LOSS_CHECK_EVERY_MS);
      }
      const wait = Math.min(nextPageAt, nextCheckAt) - performance.now();
      if (wait > 0) await sleep(wait, undefined, { signal: abort.signal }).catch(() => undefined);
    }
  };
  const running = run();
  return {
    async stop() {
      abort.abort();
      await running;
    },
  };
}
