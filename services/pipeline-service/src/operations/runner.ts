import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  claimOperations,
  countOperationItems,
  finishOperation,
  lockOperationItem,
  lockRunningOperation,
  nextOperationItems,
  queryableOf,
  settleOperationItem,
  sqlOf,
  statement,
  type Db,
  type DbOrTx,
  type OperationRecord,
  type Queryable,
  type RerunFrom,
} from '@po/db';
import {
  DomainError,
  NotFound,
  PipelineTerminal,
  isTerminalPipeline,
  newTraceId,
  operationBudget,
} from '@po/domain';
import { cancelLockedPipeline, lockPipelineRow, rerunPipeline } from '@po/engine';
import type { Logger } from '@po/telemetry';
import { startTicking } from '../ticking.js';

/**
 * Runs bulk operations (decision 0133). Every tick it claims (or renews its claim of) Running
 * operations, and applies as many of each one's items as its pace allows, in batches whose
 * transaction also marks each item done: an item is applied once or not at all, so a runner that
 * stops (a deploy, a kill -9) is followed by another that goes on from the first item not done.
 * The new pipeline of a rerun, or a cancelled one, gets its engine pass after the commit.
 */

const LOCK_TIMEOUT = statement('operation_lock_timeout', `SET LOCAL lock_timeout = '5s'`);
const SAVEPOINT = statement('operation_savepoint', 'SAVEPOINT item');
const RELEASE = statement('operation_release', 'RELEASE SAVEPOINT item');
const ROLLBACK_TO = statement('operation_rollback_to', 'ROLLBACK TO SAVEPOINT item');

/** Transactions one operation's tick runs side by side. */
const BATCHES = 2;
/** Items one operation's tick applies at most: its transactions stay short (a cancel waits for them). */
const MAX_ITEMS_PER_TICK = 200;

export interface OperationRunnerDeps {
  db: Db;
  logger: Logger;
  /** The engine pass of a pipeline, after its item committed (the sweeper catches up on a failure). */
  pass(pipelineId: number): Promise<unknown>;
  clock?: () => Date;
}

export interface OperationRunnerOptions {
  tickMs: number;
  /** How long a claim lasts without a renewal: another runner takes the operation over after it. */
  leaseSeconds?: number;
  /** Operations one runner works at once. */
  maxOperations?: number;
  runnerId?: string;
}

export function startOperationRunner(
  deps: OperationRunnerDeps,
  options: OperationRunnerOptions,
): { stop(): Promise<void> } {
  const runner =
    options.runnerId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const clock = deps.clock ?? (() => new Date());
  const sql = sqlOf(deps.db);
  const pace = new Map<number, { at: number; carry: number }>();

  /**
   * Applies `items` in one transaction, each behind a savepoint: one that cannot be applied (a
   * domain rule) is rolled back to its savepoint and marked failed with why; any other error
   * rolls the whole batch back for a later tick. The operation is share-locked, so a cancel waits
   * for the batch and none starts after it.
   */
  async function applyBatch(op: OperationRecord, items: readonly number[]): Promise<void> {
    const passFor: number[] = [];
    // A rerun is plain SQL (the pg pool, prepared statements); a cancel is the engine's Prisma step.
    const run = <T>(fn: (q: Queryable, tx: DbOrTx | null) => Promise<T>): Promise<T> =>
      op.kind === 'rerun'
        ? sql.transaction((q) => fn(q, null))
        : deps.db.$transaction((tx) => fn(queryableOf(tx), tx), {
            timeout: 60_000,
            maxWait: 10_000,
          });
    await run(async (q, tx) => {
      await q.query(LOCK_TIMEOUT);
      if (!(await lockRunningOperation(q, op.id))) return;
      for (const pipelineId of items) {
        if (!(await lockOperationItem(q, op.id, pipelineId))) continue;
        const now = clock();
        await q.query(SAVEPOINT);
        try {
          let resultPipelineId: number | null = null;
          if (op.kind === 'rerun') {
            const from = (op.rerunFrom ?? 'failed') as RerunFrom;
            const r = await rerunPipeline(q, {
              applicationId: op.applicationId,
              pipelineId,
              from,
              traceId: newTraceId(),
              now,
              readBack: false,
            });
            resultPipelineId = r.record.id;
          } else {
            const p = await lockPipelineRow(q, pipelineId);
            if (!p || p.applicationId !== op.applicationId)
              throw new NotFound(`Pipeline ${pipelineId} not found.`);
            if (isTerminalPipeline(p.status)) throw new PipelineTerminal(pipelineId, p.status);
            await cancelLockedPipeline(tx!, pipelineId, now);
          }
          await q.query(RELEASE);
          await settleOperationItem(q, op.id, pipelineId, { state: 'done', resultPipelineId }, now);
          passFor.push(resultPipelineId ?? pipelineId);
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          // It cannot be applied (not finished, already finished, deleted): counted, with why.
          await q.query(ROLLBACK_TO);
          await settleOperationItem(
            q,
            op.id,
            pipelineId,
            { state: 'failed', reason: err.message },
            now,
          );
        }
      }
    });
    for (const id of passFor)
      void deps
        .pass(id)
        .catch((e: unknown) =>
          deps.logger.warn(
            { err: e, pipelineId: id },
            'operation: pass after the item failed; the sweeper will retry',
          ),
        );
  }

  async function work(op: OperationRecord): Promise<void> {
    const now = Date.now();
    const last = pace.get(op.id) ?? { at: now - options.tickMs, carry: 0 };
    const budget = operationBudget(op.maxPerSecond, now - last.at, last.carry);
    pace.set(op.id, { at: now, carry: budget.carry });
    if (budget.take === 0) return;
    const items = await nextOperationItems(sql, op.id, Math.min(budget.take, MAX_ITEMS_PER_TICK));
    // A few batches side by side, each one transaction: the pool's other connections stay the engine's.
    const size = Math.max(1, Math.ceil(items.length / BATCHES));
    const batches: number[][] = [];
    for (let i = 0; i < items.length; i += size) batches.push(items.slice(i, i + size));
    await Promise.all(batches.map((b) => applyBatch(op, b)));
    if (items.length < Math.min(budget.take, MAX_ITEMS_PER_TICK)) {
      if (await finishOperation(sql, op.id, clock())) {
        pace.delete(op.id);
        deps.logger.info({ operationId: op.id, kind: op.kind }, 'operation finished');
      }
    } else {
      await countOperationItems(sql, op.id, clock());
    }
  }

  async function tick(): Promise<void> {
    try {
      const ops = await claimOperations(
        sql,
        runner,
        clock(),
        options.leaseSeconds ?? 5,
        options.maxOperations ?? 4,
      );
      const claimed = new Set(ops.map((o) => o.id));
      for (const id of pace.keys()) if (!claimed.has(id)) pace.delete(id);
      for (const op of ops) {
        if (ticking.stopping) return;
        try {
          await work(op);
        } catch (err) {
          deps.logger.warn(
            { err, operationId: op.id },
            'operation: an item failed to apply; retried next tick',
          );
        }
      }
    } catch (err) {
      deps.logger.warn({ err }, 'operation runner: claim failed; retried next tick');
    }
  }

  const ticking = startTicking(tick, options.tickMs);
  return { stop: () => ticking.stop() };
}
