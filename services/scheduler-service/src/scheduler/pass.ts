import { PendingAnnouncements, type SchedulerDeps } from './deps.js';
import { fireDueBatch } from './fire-batch.js';
import { FireFailed, fireScheduleGuarded, promoteQueuedRuns, type FireResult, type TickOutcome } from './fire.js';

export interface PassSummary {
  /** Schedules handled. */
  schedules: number;
  /** Ticks handled, by outcome. */
  ticks: Record<TickOutcome, number>;
  /** Ticks missed (catch-up policy applied). */
  missed: number;
  /** Queued runs that got their pipeline. */
  promoted: number;
  /** Schedules whose own (guarded) transaction failed; retried on the next pass. */
  failed: number;
}

export interface PassOptions {
  /** Transactions at once (SCHEDULER_CONCURRENCY). */
  concurrency?: number;
  /** Schedules per transaction (SCHEDULER_BATCH_SIZE). */
  batchSize?: number;
}

export const DEFAULT_BATCH_SIZE = 250;

const emptySummary = (): PassSummary => ({
  schedules: 0,
  ticks: { created: 0, failed: 0, skipped: 0, queued: 0, already_fired: 0 },
  missed: 0,
  promoted: 0,
  failed: 0,
});

function tallyInto(summary: PassSummary, results: readonly FireResult[]): void {
  for (const result of results) {
    summary.schedules += 1;
    summary.missed += result.missed;
    for (const outcome of result.outcomes) summary.ticks[outcome] += 1;
  }
}

/**
 * Batches one worker of an ahead pass holds written and waiting for their instant, besides the one
 * it prepares; main.ts sizes the pool for them. With the ahead batches twice SCHEDULER_BATCH_SIZE,
 * the defaults prepare 3,000 schedules of one instant before it.
 */
export const AHEAD_WAITING_PER_WORKER = 2;
/** An ahead batch takes this many times SCHEDULER_BATCH_SIZE (at most 1,000): it has time to. */
const AHEAD_BATCH_FACTOR = 2;

/**
 * One scheduler pass at `deps.clock()`. First every due schedule is fired set-based (fire-batch.ts),
 * `batchSize` schedules per transaction and `concurrency` transactions at once. A batch that fails
 * is rolled back and its schedules are retried one by one in guarded mode (claim first,
 * savepoints), so a schedule that keeps failing is isolated and left for the next pass instead of
 * holding up the others. Then Queued runs whose schedule is free are promoted, and last the
 * schedules the batches deferred (Replace cancellations, Queue promotions first) fire in guarded
 * mode. Nothing runs before the batches, so a pass woken at a fire time starts firing at once.
 * Tests drive the scheduler through this function.
 */
export async function runDuePass(deps: SchedulerDeps, options: PassOptions = {}): Promise<PassSummary> {
  const summary = emptySummary();
  const tally = (results: readonly FireResult[]) => tallyInto(summary, results);
  // Schedules the batches must not take again: given up on in this pass, or left to the guarded path.
  const exclude = new Set<number>();
  const deferred: number[] = [];
  const announcements = new PendingAnnouncements(deps);
  const guarded = async (id: number): Promise<void> => {
    try {
      const result = await fireScheduleGuarded(deps, id);
      if (result) tally([result]);
    } catch (err) {
      summary.failed += 1;
      deps.logger.error({ err, scheduleId: id }, 'firing a schedule failed; retried next pass');
    }
  };
  const worker = async (): Promise<void> => {
    for (;;) {
      try {
        const batch = await fireDueBatch(deps, { limit: options.batchSize ?? DEFAULT_BATCH_SIZE, exclude, announcements });
        if (batch === null) return;
        tally(batch.results);
        for (const id of batch.deferred) exclude.add(id);
        deferred.push(...batch.deferred);
      } catch (err) {
        const ids = err instanceof FireFailed ? err.scheduleIds : [];
        deps.logger.warn({ err, scheduleIds: ids }, 'a fire batch failed; retrying its schedules one by one');
        if (ids.length === 0) return;
        // Not for the other batches meanwhile: what failed here would likely fail there again.
        for (const id of ids) exclude.add(id);
        for (const id of ids) await guarded(id);
      }
    }
  };
  const concurrency = Math.max(1, options.concurrency ?? 1);
  await Promise.all(Array.from({ length: concurrency }, worker));
  announcements.flush();
  summary.promoted = await promoteQueuedRuns(deps);
  // The deferred ones, `concurrency` transactions at once too.
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < deferred.length) await guarded(deferred[next++]!);
    }),
  );
  await announcements.settle();
  return summary;
}

/**
 * Prepares the ticks due at `at`, a fire instant still to come, so that they become visible at that
 * instant instead of a write's time after it (decision 0097): each batch is written as of `at` and
 * its transaction commits when the clock reaches it. A worker starts its next batch while the
 * previous one waits, holding at most AHEAD_WAITING_PER_WORKER waiting. Whatever a batch leaves
 * (see aheadSafe) or fails on stays for the regular pass, which the loop runs right after: this is
 * an optimisation of when the work happens, never the only way a tick fires.
 */
export async function runAheadPass(deps: SchedulerDeps, at: Date, options: PassOptions = {}): Promise<PassSummary> {
  const summary = emptySummary();
  const exclude = new Set<number>();
  const skip = (held: { left: readonly number[]; deferred: readonly number[] }) => {
    for (const id of held.left) exclude.add(id);
    for (const id of held.deferred) exclude.add(id);
  };
  const announcements = new PendingAnnouncements(deps);
  const worker = async (): Promise<void> => {
    const waiting: Promise<unknown>[] = [];
    for (;;) {
      let signal!: (step: 'written') => void;
      const written = new Promise<'written'>((resolve) => (signal = resolve));
      const batch = fireDueBatch(deps, {
        limit: Math.min(1000, AHEAD_BATCH_FACTOR * (options.batchSize ?? DEFAULT_BATCH_SIZE)),
        exclude,
        announcements,
        ahead: {
          at,
          written: (held) => {
            skip(held);
            signal('written');
          },
        },
      }).then(
        (outcome) => {
          if (outcome === null) return 'empty' as const;
          tallyInto(summary, outcome.results);
          skip(outcome);
          return 'done' as const;
        },
        (err: unknown) => {
          const ids = err instanceof FireFailed ? err.scheduleIds : [];
          for (const id of ids) exclude.add(id);
          summary.failed += ids.length;
          deps.logger.warn({ err, scheduleIds: ids }, 'a batch prepared ahead failed; its schedules fire in the regular pass');
          // Nothing locked (the database is unreachable, say): stop rather than spin.
          return ids.length === 0 ? ('empty' as const) : ('done' as const);
        },
      );
      const step = await Promise.race([written, batch]);
      if (step === 'empty') break;
      if (step === 'written') {
        waiting.push(batch);
        if (waiting.length > AHEAD_WAITING_PER_WORKER) await waiting.shift();
      }
    }
    await Promise.all(waiting);
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  await announcements.settle();
  return summary;
}
